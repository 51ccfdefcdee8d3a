"""Producing and consuming records for ``odradek topic produce|consume`` (what kcat does).

Producing: input lines become records (text: the line is the value, or ``KEY<sep>VALUE`` with
``--key-separator``; json: ``{"key", "value", "headers", "partition"}`` per line), placed by
Kafka's default partitioner (murmur2 of the key; records without a key go round-robin, one
batch at a time), sent in magic-2 batches, one Produce request per leader, and checked
partition by partition.

Consuming: Fetch from the partitions' leaders from the offsets asked for, records decoded from
the returned batches (control batches and records below the fetch offset skipped), printed as
text or one JSON object per line.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cli.client import AdminClient, ClientError, KafkaError, TopicPartition, check
from protocol.error_codes import ErrorCode
from protocol.partitioner import default_partition
from protocol.records import compression as codecs
from protocol.records.record import RecordBatchBuilder, iter_record_batches

COMPRESSION = {
    "none": codecs.NONE,
    "gzip": codecs.GZIP,
    "snappy": codecs.SNAPPY,
    "lz4": codecs.LZ4,
    "zstd": codecs.ZSTD,
}

#: records per batch and bytes per batch the producer aims for
BATCH_RECORDS = 2000
BATCH_BYTES = 512 * 1024


@dataclass
class OutRecord:
    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    partition: int | None = None
    timestamp: int = -1


def _bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, dict) and "base64" in value:
        return base64.b64decode(value["base64"])
    if not isinstance(value, str):
        value = json.dumps(value, separators=(",", ":"))
    return str(value).encode()


def parse_line(
    line: str,
    fmt: str,
    *,
    key_separator: str | None,
    headers: list[tuple[str, bytes | None]],
    partition: int | None,
) -> OutRecord:
    """One input line as a record (see the module docstring)."""
    if fmt == "json":
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise ClientError(f"input line is not JSON: {e}: {line[:80]!r}") from None
        if not isinstance(obj, dict):
            obj = {"value": obj}
        got = obj.get("headers") or {}
        pairs = got.items() if isinstance(got, dict) else [tuple(h) for h in got]
        return OutRecord(
            value=_bytes(obj.get("value")),
            key=_bytes(obj.get("key")),
            headers=[*headers, *((str(k), _bytes(v)) for k, v in pairs)],
            partition=obj.get("partition", partition),
            timestamp=int(obj.get("timestamp", -1)),
        )
    if key_separator is not None:
        key, sep, value = line.partition(key_separator)
        if not sep:
            raise ClientError(f"input line has no key separator {key_separator!r}: {line[:80]!r}")
        return OutRecord(value.encode(), key.encode(), list(headers), partition)
    return OutRecord(line.encode(), None, list(headers), partition)


class Producer:
    """Batches records per partition and sends them (acks as asked), raising on the first
    partition error. Not thread-safe."""

    def __init__(
        self,
        client: AdminClient,
        topic: str,
        *,
        acks: int = -1,
        compression: int = codecs.NONE,
        on_sent: Callable[[int], None] | None = None,
    ) -> None:
        self.client = client
        self.topic = topic
        self.acks = acks
        self.compression = compression
        self.on_sent = on_sent
        meta = client.topic(topic)
        self.partitions = sorted(meta.partitions)
        self._next = 0
        self._builders: dict[int, RecordBatchBuilder] = {}
        self._counts: dict[int, int] = {}
        #: (first offset, last offset) acknowledged per partition
        self.acknowledged: dict[int, list[int]] = {}
        self.sent = 0

    def _partition_for(self, record: OutRecord) -> int:
        if record.partition is not None:
            if record.partition not in self.partitions:
                raise ClientError(f"topic {self.topic} has no partition {record.partition}")
            return record.partition
        if record.key is not None:
            return default_partition(record.key, len(self.partitions))
        return self.partitions[self._next % len(self.partitions)]

    def add(self, record: OutRecord) -> None:
        partition = self._partition_for(record)
        builder = self._builders.get(partition)
        if builder is None:
            builder = self._builders[partition] = RecordBatchBuilder(compression=self.compression)
            self._counts[partition] = 0
        timestamp = record.timestamp if record.timestamp >= 0 else int(time.time() * 1000)
        builder.append(record.value, key=record.key, timestamp=timestamp, headers=record.headers)
        self._counts[partition] += 1
        if self._counts[partition] >= BATCH_RECORDS or builder.size_in_bytes() >= BATCH_BYTES:
            if record.key is None and record.partition is None:
                self._next += 1  # sticky: the next keyless batch goes to the next partition
            self.flush()

    def flush(self) -> None:
        if not self._builders:
            return
        batches = {p: (b.build(), self._counts[p]) for p, b in self._builders.items()}
        self._builders.clear()
        self._counts.clear()
        count = sum(n for _, n in batches.values())
        self.client.retrying("Produce", lambda: self._send(batches))
        self.sent += count
        if self.on_sent is not None:
            self.on_sent(count)

    def _send(self, batches: dict[int, tuple[bytes, int]]) -> None:
        from protocol.messages.produce import (
            PartitionProduceData,
            ProduceRequest,
            TopicProduceData,
        )

        pending = dict(batches)  # what an earlier attempt had acknowledged is gone from it
        for node, tps in self.client.by_leader((self.topic, p) for p in pending).items():
            parts = [PartitionProduceData(index=p, records=pending[p][0]) for _, p in tps]
            request = ProduceRequest(
                transactional_id=None,
                acks=self.acks,
                timeout_ms=int(self.client.timeout_s * 1000),
                topic_data=[TopicProduceData(name=self.topic, partition_data=parts)],
            )
            conn = self.client.node(node)
            if self.acks == 0:
                conn.send(request, expect_response=False)
                for _, p in tps:
                    batches.pop(p, None)
                continue
            body = conn.request(request)
            for t in body.responses:
                for r in t.partition_responses:
                    check(r.error_code, f"Produce {self.topic}-{r.index}", r.error_message)
                    n = pending[r.index][1]
                    span = self.acknowledged.setdefault(r.index, [r.base_offset, -1])
                    span[1] = r.base_offset + n - 1
                    batches.pop(r.index, None)


@dataclass
class InRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def record_json(record: InRecord) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": {k: _text(v) for k, v in record.headers},
    }


def record_text(record: InRecord, *, key_separator: str | None, print_headers: bool) -> str:
    parts = []
    if print_headers:
        parts.append(",".join(f"{k}={_text(v) or ''}" for k, v in record.headers))
    value = _text(record.value) or ""
    if key_separator is not None:
        value = f"{_text(record.key) or ''}{key_separator}{value}"
    parts.append(value)
    return "\t".join(parts)


def consume(
    client: AdminClient,
    positions: dict[TopicPartition, int],
    *,
    stop_at: dict[TopicPartition, int] | None,
    max_wait_ms: int = 500,
    max_bytes: int = 4 * 1024 * 1024,
) -> Iterator[InRecord]:
    """Records from ``positions`` onwards, partition by partition as they come; a partition is
    done when it reaches its ``stop_at`` offset (None: follow for ever)."""
    from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic

    positions = dict(positions)
    while True:
        active = {
            tp: off for tp, off in positions.items() if stop_at is None or off < stop_at.get(tp, 0)
        }
        if not active:
            return
        leaders = client.retrying("Fetch", lambda a=active: client.by_leader(a))  # type: ignore[misc]
        for node, tps in leaders.items():
            topics: dict[str, list[Any]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(
                    FetchPartition(
                        partition=p, fetch_offset=active[(t, p)], partition_max_bytes=max_bytes
                    )
                )
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
                forgotten_topics_data=[],
                rack_id="",
            )
            conn = client.node(node)
            body = conn.request(request, timeout_s=client.timeout_s + max_wait_ms / 1000)
            if body.error_code:
                raise KafkaError(body.error_code, "Fetch")
            for t in body.responses:
                for p in t.partitions:
                    tp = (t.topic, p.partition_index)
                    if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        raise KafkaError(p.error_code, f"Fetch {tp[0]}-{tp[1]} at {active[tp]}")
                    if p.error_code:
                        if ErrorCode.of(p.error_code) in (
                            ErrorCode.NOT_LEADER_OR_FOLLOWER,
                            ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            ErrorCode.FENCED_LEADER_EPOCH,
                        ):
                            continue  # the next round looks the leader up again
                        raise KafkaError(p.error_code, f"Fetch {tp[0]}-{tp[1]}")
                    records = p.records or b""
                    for batch in iter_record_batches(memoryview(records), allow_partial=True):
                        if batch.is_control:
                            positions[tp] = max(positions[tp], batch.next_offset)
                            continue
                        ts_type = "LogAppendTime" if batch.timestamp_type else "CreateTime"
                        for r in batch.records:
                            if r.offset < positions[tp]:
                                continue
                            if stop_at is not None and r.offset >= stop_at.get(tp, 0):
                                break
                            positions[tp] = r.offset + 1
                            yield InRecord(
                                tp[0],
                                tp[1],
                                r.offset,
                                r.timestamp,
                                ts_type,
                                r.key,
                                r.value,
                                list(r.headers),
                            )
                        positions[tp] = max(positions[tp], batch.next_offset)
                        if stop_at is not None:
                            positions[tp] = min(positions[tp], stop_at.get(tp, positions[tp]))


def lines(stream: Iterable[str]) -> Iterator[str]:
    """Input lines without their line ends; empty lines are skipped, as kcat does."""
    for line in stream:
        line = line.rstrip("\r\n")
        if line:
            yield line
