"""Offset arithmetic of the source, free of I/O: admission control, ranges and their splits.

* :func:`rate_limit` shares ``maxOffsetsPerTrigger`` among partitions in proportion to what each
  has waiting (largest remainders, so the total is exact and no partition is starved for long).
* :class:`TriggerDelay` is ``minOffsetsPerTrigger`` + ``maxTriggerDelay``: hold a micro-batch
  back until enough records wait or the delay has passed since the last one (Spark's rule).
* :func:`plan_ranges` turns (start, end) offsets into offset ranges, one per partition, split
  for ``minPartitions`` and ``maxRecordsPerPartition``.

Time is a parameter (milliseconds) wherever it matters.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

TopicPartition = tuple[str, int]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [from_offset, until_offset) of one partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> dict[TopicPartition, int]:
    """End offsets that admit at most ``max_rows`` records in total, shared in proportion to
    each partition's backlog (``latest - start``). Partitions without a start (new ones) must be
    given one by the caller. Partitions whose latest is at or below their start keep latest."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = sum(sizes.values())
    if total <= max_rows:
        return dict(latest)
    shares: dict[TopicPartition, int] = {}
    remainders: list[tuple[float, TopicPartition]] = []
    for tp, size in sizes.items():
        exact = max_rows * size / total
        whole = math.floor(exact)
        shares[tp] = whole
        remainders.append((exact - whole, tp))
    left = max_rows - sum(shares.values())
    # Largest remainders first; ties go to the partition with the larger backlog, then by name.
    remainders.sort(key=lambda r: (-r[0], -sizes[r[1]], r[1]))
    for _, tp in remainders[:left]:
        shares[tp] += 1
    return {tp: start[tp] + shares[tp] if tp in shares else end for tp, end in latest.items()}


@dataclass
class TriggerDelay:
    """``minOffsetsPerTrigger`` with ``maxTriggerDelay``, as Spark's Kafka source applies them:
    a micro-batch runs when the delay has passed since the last one ran, or when at least
    ``min_rows`` records wait; otherwise it is held back. The first call after start runs (the
    last trigger is "long ago")."""

    min_rows: int
    max_delay_ms: int
    last_trigger_ms: float = 0.0

    def admit(self, available_rows: int, now_ms: float) -> bool:
        if now_ms - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now_ms
            return True
        if available_rows < self.min_rows:
            return False
        self.last_trigger_ms = now_ms
        return True


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    *,
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Non-empty ranges [start, end) for the partitions of ``end`` (every one of them must have
    a start), split so that there are at least ``min_partitions`` when the data allows, and no
    range holds more than ``max_records_per_partition`` offsets."""
    ranges = [
        OffsetRange(tp[0], tp[1], start[tp], end[tp]) for tp in sorted(end) if end[tp] > start[tp]
    ]
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    ideal = total / min_partitions if min_partitions and len(ranges) < min_partitions else None
    for r in ranges:
        parts = 1
        if ideal:
            parts = max(1, round(r.size / ideal))
        if max_records_per_partition:
            parts = max(parts, math.ceil(r.size / max_records_per_partition))
        out.extend(split_range(r, parts))
    return out


def split_range(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` cut into ``parts`` contiguous pieces whose sizes differ by at most one."""
    parts = max(1, min(parts, r.size))
    if parts == 1:
        return [r]
    base, extra = divmod(r.size, parts)
    out = []
    offset = r.from_offset
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, offset, offset + size))
        offset += size
    return out
