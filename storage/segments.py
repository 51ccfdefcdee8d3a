"""LogSegments: an immutable, sorted snapshot of a log's segments (copy-on-write)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from storage.segment import LogSegment


class LogSegments:
    """The segments of one log, sorted by base offset; the last one is the active segment.

    A snapshot never changes: adding or removing segments builds a new one, which the owning
    log publishes with one attribute assignment under its lock (the copy-on-write segment list of
    Kafka's log implementation documentation: binary searches proceed on an immutable snapshot
    while deletes go on). Readers take the current snapshot once and search it without any
    lock.

    On-disk format: none of its own (the directory listing of ``.log`` files). Crash: nothing.
    Thread-safety: immutable, so any thread may use a snapshot.
    """

    __slots__ = ("_bases", "_segments")

    def __init__(self, segments: Iterable[LogSegment] = ()) -> None:
        ordered = sorted(segments, key=lambda s: s.base_offset)
        self._segments: tuple[LogSegment, ...] = tuple(ordered)
        self._bases: list[int] = [s.base_offset for s in ordered]
        if len(set(self._bases)) != len(self._bases):
            raise ValueError(f"duplicate segment base offsets: {self._bases}")

    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    def __getitem__(self, i: int) -> LogSegment:
        return self._segments[i]

    def __bool__(self) -> bool:
        return bool(self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._segments

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    @property
    def first(self) -> LogSegment:
        return self._segments[0]

    def floor_index(self, offset: int) -> int:
        """Index of the segment with the largest base offset <= ``offset`` (-1 if none)."""
        return bisect.bisect_right(self._bases, offset) - 1

    def floor(self, offset: int) -> LogSegment | None:
        i = self.floor_index(offset)
        return self._segments[i] if i >= 0 else None

    def get(self, base_offset: int) -> LogSegment | None:
        i = bisect.bisect_left(self._bases, base_offset)
        if i < len(self._bases) and self._bases[i] == base_offset:
            return self._segments[i]
        return None

    def next_after(self, segment: LogSegment) -> LogSegment | None:
        i = bisect.bisect_right(self._bases, segment.base_offset)
        return self._segments[i] if i < len(self._segments) else None

    def between(self, from_offset: int, to_offset: int) -> list[LogSegment]:
        """The segments that may hold offsets in [from_offset, to_offset): the floor segment of
        ``from_offset`` and every later one with a base offset below ``to_offset``."""
        start = max(self.floor_index(from_offset), 0)
        stop = bisect.bisect_left(self._bases, to_offset)
        return list(self._segments[start : max(stop, start)])

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def without(self, segments: Iterable[LogSegment]) -> LogSegments:
        gone = {id(s) for s in segments}
        return LogSegments(s for s in self._segments if id(s) not in gone)

    def replaced(self, old: Iterable[LogSegment], new: Iterable[LogSegment]) -> LogSegments:
        gone = {id(s) for s in old}
        kept = [s for s in self._segments if id(s) not in gone]
        return LogSegments([*kept, *new])

    def __repr__(self) -> str:
        return f"LogSegments({list(self._bases)})"
