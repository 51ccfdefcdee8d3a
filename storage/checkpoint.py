"""Kafka's small text files: offset checkpoints, ``partition.metadata``, ``meta.properties`` and the
clean-shutdown marker.

Every file is written whole to ``<name>.tmp``, fsynced and renamed over the old one, so a crash
leaves either the old or the new content (plus, at worst, a stale ``.tmp`` the loader deletes).
None of these functions keep state or take locks; callers serialize writes to one file.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from storage.errors import StorageError
from storage.files import write_atomically

CHECKPOINT_VERSION = 0


class CorruptCheckpoint(StorageError):
    """A checkpoint or metadata file that does not follow its format."""


# --- "version / count / entries" checkpoints ------------------------------------------------------


def write_checkpoint(path: Path, lines: Iterable[str], *, fsync: bool = True) -> None:
    """Kafka's CheckpointFile: a version line, a count line, then one line per entry."""
    body = list(lines)
    text = f"{CHECKPOINT_VERSION}\n{len(body)}\n" + "".join(line + "\n" for line in body)
    write_atomically(path, text.encode("utf-8"), fsync=fsync)


def read_checkpoint(path: Path, fields: int) -> list[list[str]]:
    """The entries of a checkpoint file, each split into ``fields`` words; [] if it is missing.
    Raises CorruptCheckpoint if the version, the count or an entry is malformed."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if len(lines) < 2:
        raise CorruptCheckpoint(f"{path}: missing version or count line")
    try:
        found_version = int(lines[0].strip())
        count = int(lines[1].strip())
    except ValueError as e:
        raise CorruptCheckpoint(f"{path}: malformed header: {e}") from e
    if found_version != CHECKPOINT_VERSION:
        raise CorruptCheckpoint(f"{path}: unrecognized version {found_version}")
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise CorruptCheckpoint(f"{path}: expected {count} entries, found {len(entries)}")
    for entry in entries:
        if len(entry) != fields:
            raise CorruptCheckpoint(f"{path}: malformed entry {' '.join(entry)!r}")
    return entries


def write_offsets_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """``recovery-point-offset-checkpoint`` and friends: ``topic partition offset`` lines."""
    write_checkpoint(path, (f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())))


def read_offsets_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for topic, partition, offset in read_checkpoint(path, 3):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError as e:
            raise CorruptCheckpoint(f"{path}: malformed entry {topic} {partition} {offset}") from e
    return out


def write_epoch_checkpoint(
    path: Path, entries: Iterable[tuple[int, int]], *, fsync: bool = True
) -> None:
    """``leader-epoch-checkpoint``: ``epoch startOffset`` lines."""
    write_checkpoint(path, (f"{epoch} {offset}" for epoch, offset in entries), fsync=fsync)


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    out = []
    for epoch, offset in read_checkpoint(path, 2):
        try:
            out.append((int(epoch), int(offset)))
        except ValueError as e:
            raise CorruptCheckpoint(f"{path}: malformed entry {epoch} {offset}") from e
    return out


# --- partition.metadata ---------------------------------------------------------------------------


def uuid_to_kafka_string(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka_string(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a base64 UUID")
    return uuid.UUID(bytes=raw)


def write_partition_metadata(path: Path, topic_id: uuid.UUID, *, fsync: bool = True) -> None:
    """``partition.metadata``: ``version: 0`` and ``topic_id: <base64 uuid>``, the second line
    without a newline, byte for byte as Kafka's PartitionMetadataFile writes it."""
    text = f"version: 0\ntopic_id: {uuid_to_kafka_string(topic_id)}"
    write_atomically(path, text.encode("ascii"), fsync=fsync)


def read_partition_metadata(path: Path) -> uuid.UUID | None:
    """The topic id in ``partition.metadata``, or None if the file is missing."""
    try:
        text = path.read_text("ascii")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise CorruptCheckpoint(f"{path}: not ASCII") from e
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip()
    if values.get("version") != "0" or "topic_id" not in values:
        raise CorruptCheckpoint(f"{path}: expected 'version: 0' and a topic_id line")
    try:
        return uuid_from_kafka_string(values["topic_id"])
    except ValueError as e:
        raise CorruptCheckpoint(f"{path}: bad topic id {values['topic_id']!r}") from e


# --- meta.properties ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """A log dir's ``meta.properties`` (Kafka's v0 form: ``version=0``, ``broker.id``,
    ``cluster.id``; Kafka's v1 ``node.id`` is read as the broker id). Written atomically, so a
    crash leaves the old or the new file. Immutable value."""

    broker_id: int | None = None
    cluster_id: str | None = None
    version: int = 0

    def to_text(self) -> str:
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
        lines = ["#", f"#{stamp}"]
        if self.cluster_id is not None:
            lines.append(f"cluster.id={self.cluster_id}")
        lines.append(f"version={self.version}")
        if self.broker_id is not None:
            lines.append(f"broker.id={self.broker_id}")
        return "\n".join(lines) + "\n"


def write_meta_properties(path: Path, meta: MetaProperties) -> None:
    write_atomically(path, meta.to_text().encode("utf-8"))


def read_meta_properties(path: Path) -> MetaProperties | None:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            key, sep, value = line.partition(":")
        props[key.strip()] = value.strip()
    try:
        version = int(props.get("version", "0"))
        broker = props.get("broker.id", props.get("node.id"))
        return MetaProperties(
            broker_id=int(broker) if broker is not None else None,
            cluster_id=props.get("cluster.id"),
            version=version,
        )
    except ValueError as e:
        raise CorruptCheckpoint(f"{path}: {e}") from e


# --- clean shutdown marker ------------------------------------------------------------------------


def write_clean_shutdown_file(path: Path, broker_epoch: int = -1) -> None:
    """Kafka 3.7+'s ``.kafka_cleanshutdown`` content; older Kafka only checks that it exists."""
    text = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
    write_atomically(path, text.encode("ascii"))
