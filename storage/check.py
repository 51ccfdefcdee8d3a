"""Offline verification of a log directory (``odradek check-log DIR``): what recovery would find,
without changing a byte.

For every partition directory (``<topic>-<partition>``) and every segment in it:

* the ``.log``: each batch read as recovery reads it (size, magic 2, CRC-32C, offsets ascending
  and within the segment); the first invalid batch is where recovery would truncate, and the
  bytes after it are what it would drop;
* the ``.index``: whole 8-byte entries, relative offsets strictly increasing, positions
  increasing and inside the valid part of the log, each pointing at a batch boundary whose
  batch holds the offset (Kafka's ``OffsetIndex.sanityCheck`` and more);
* the ``.timeindex``: whole 12-byte entries, timestamps and offsets non-decreasing, offsets
  within the segment.

A preallocated index of the active segment ends in zero entries; they are not errors. Read-only:
safe on the log directory of a running broker (the result may then be a moment old).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from protocol.errors import ProtocolError
from protocol.records import batch as rb
from storage import files
from storage.util import INT32_MAX

_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


@dataclass
class SegmentCheck:
    """What :func:`check_segment` found in one segment."""

    path: str
    base_offset: int
    size: int
    batches: int = 0
    records: int = 0
    next_offset: int = -1
    valid_bytes: int = 0
    #: bytes recovery would truncate (after the last valid batch)
    truncate_bytes: int = 0
    truncate_reason: str | None = None
    index_entries: int = 0
    time_index_entries: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and self.truncate_bytes == 0


def _scan_log(path: Path, base_offset: int, result: SegmentCheck) -> dict[int, tuple[int, int]]:
    """Validates the batches; returns {position: (base offset, last offset)} of valid ones."""
    data = path.read_bytes()
    result.size = len(data)
    batches: dict[int, tuple[int, int]] = {}
    pos = 0
    next_expected = base_offset
    reason = None
    while pos < len(data):
        try:
            header = rb.read_header(data, pos)
        except ProtocolError as e:
            reason = str(e)
            break
        except (struct.error, IndexError):
            reason = f"{len(data) - pos} trailing bytes are not a batch header"
            break
        if pos + header.size > len(data):
            reason = f"batch of {header.size} bytes at position {pos} is cut short"
            break
        if rb.crc_of(data, pos, header.size) != header.crc:
            reason = f"CRC mismatch in the batch at position {pos}"
            break
        if header.base_offset < next_expected or header.last_offset_delta < 0:
            reason = (
                f"offsets [{header.base_offset}, {header.last_offset}] at position {pos} are out "
                f"of order (expected >= {next_expected})"
            )
            break
        if header.last_offset - base_offset > INT32_MAX:
            reason = f"offset {header.last_offset} does not fit the segment"
            break
        batches[pos] = (header.base_offset, header.last_offset)
        result.batches += 1
        result.records += max(header.record_count, 0)
        next_expected = header.next_offset
        pos += header.size
    result.valid_bytes = pos
    result.next_offset = next_expected
    result.truncate_bytes = len(data) - pos
    result.truncate_reason = reason
    return batches


def _check_offset_index(
    path: Path, base_offset: int, batches: dict[int, tuple[int, int]], result: SegmentCheck
) -> None:
    if not path.exists():
        return  # recovery rebuilds a missing index
    data = path.read_bytes()
    if len(data) % _INDEX_ENTRY.size:
        result.errors.append(f"{path.name}: {len(data)} bytes is not a whole number of entries")
    last_rel, last_pos = -1, -1
    for i, (rel, position) in enumerate(_INDEX_ENTRY.iter_unpack(data[: len(data) // 8 * 8])):
        if rel == 0 and position == 0 and (i > 0 or result.valid_bytes == 0):
            break  # the preallocated, unused tail
        result.index_entries += 1
        if rel <= last_rel and i > 0:
            result.errors.append(
                f"{path.name}: entry {i}: offset {base_offset + rel} not increasing"
            )
            return
        if position < last_pos or position >= max(result.valid_bytes, 1):
            result.errors.append(
                f"{path.name}: entry {i}: position {position} outside the valid log "
                f"({result.valid_bytes} bytes) or not increasing"
            )
            return
        span = batches.get(position)
        if span is None:
            result.errors.append(
                f"{path.name}: entry {i}: position {position} is not a batch start"
            )
            return
        if not span[0] <= base_offset + rel <= span[1]:
            result.errors.append(
                f"{path.name}: entry {i}: offset {base_offset + rel} is not in the batch at "
                f"{position} ({span[0]}..{span[1]})"
            )
            return
        last_rel, last_pos = rel, position


def _check_time_index(path: Path, base_offset: int, result: SegmentCheck) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    if len(data) % _TIME_ENTRY.size:
        result.errors.append(f"{path.name}: {len(data)} bytes is not a whole number of entries")
    last_ts, last_rel = -1, -1
    for i, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(data[: len(data) // 12 * 12])):
        if ts == 0 and rel == 0 and (i > 0 or result.valid_bytes == 0):
            break
        result.time_index_entries += 1
        if ts < last_ts or rel < last_rel:
            result.errors.append(f"{path.name}: entry {i}: timestamp or offset goes backwards")
            return
        if result.next_offset >= 0 and base_offset + rel > max(result.next_offset - 1, base_offset):
            result.errors.append(
                f"{path.name}: entry {i}: offset {base_offset + rel} beyond the log's last offset"
            )
            return
        last_ts, last_rel = ts, rel


def check_segment(log_path: Path) -> SegmentCheck:
    base_offset = files.offset_from_file_name(log_path.name)
    result = SegmentCheck(str(log_path), base_offset, 0)
    batches = _scan_log(log_path, base_offset, result)
    stem = log_path.with_suffix("")
    _check_offset_index(stem.with_suffix(files.INDEX_FILE_SUFFIX), base_offset, batches, result)
    _check_time_index(stem.with_suffix(files.TIME_INDEX_FILE_SUFFIX), base_offset, result)
    return result


def partition_dirs(root: Path) -> list[Path]:
    """``root`` itself if it is a partition directory, else the partition directories in it."""
    try:
        files.parse_log_dir_name(root.name)
        return [root]
    except ValueError:
        pass
    out = []
    for name in sorted(os.listdir(root)):
        path = root / name
        if not path.is_dir() or name.endswith(
            (files.DELETE_DIR_SUFFIX, files.FUTURE_DIR_SUFFIX, files.STRAY_DIR_SUFFIX)
        ):
            continue
        try:
            files.parse_log_dir_name(name)
        except ValueError:
            continue
        out.append(path)
    return out


def check_dir(root: Path) -> list[SegmentCheck]:
    """Every segment of every partition under ``root`` (a log dir or one partition's dir)."""
    results = []
    for directory in partition_dirs(root):
        logs = sorted(directory.glob("*" + files.LOG_FILE_SUFFIX))
        previous_next = -1
        for log_path in logs:
            result = check_segment(log_path)
            if 0 <= result.base_offset < previous_next:
                result.errors.append(
                    f"base offset {result.base_offset} is below the previous segment's next "
                    f"offset {previous_next}"
                )
            previous_next = max(previous_next, result.next_offset)
            results.append(result)
    return results
