"""Loading a ``__consumer_offsets`` partition when its log cannot be read to the end."""

from __future__ import annotations

from dataclasses import dataclass

from broker.coordinators.partition_log import read_for_load
from coordination.runtime.runtime import OffsetRecord
from protocol.records.record import RecordBatchBuilder


@dataclass
class _Region:
    data: bytes

    def read(self) -> bytes:
        return self.data


class FlakyLog:
    """One single-record batch per offset; reading ``fail_at`` raises OSError ``failures``
    times (a disk fault, which a test cannot produce for real)."""

    def __init__(self, count: int, *, fail_at: int, failures: int) -> None:
        self.batches = []
        for offset in range(count):
            builder = RecordBatchBuilder(base_offset=offset)
            builder.append(b"v%d" % offset, key=b"k%d" % offset, timestamp=0)
            self.batches.append(bytes(builder.build()))
        self.log_start_offset = 0
        self.high_watermark = self.log_end_offset = count
        self.fail_at = fail_at
        self.failures = failures

    def read(self, offset: int, max_bytes: int, *, max_offset: int) -> _Region:
        if offset == self.fail_at and self.failures > 0:
            self.failures -= 1
            raise OSError("Input/output error")
        return _Region(self.batches[offset])


def test_a_failed_read_is_retried() -> None:
    plog = FlakyLog(4, fail_at=2, failures=1)
    records = read_for_load("__consumer_offsets-0", lambda: plog)
    assert [r[0] for r in records] == [b"k0", b"k1", b"k2", b"k3"]
    assert [r.offset for r in records] == [0, 1, 2, 3]  # type: ignore[union-attr]


def test_a_read_that_keeps_failing_loads_what_was_read_before() -> None:
    plog = FlakyLog(4, fail_at=2, failures=2)
    records = read_for_load("__consumer_offsets-0", lambda: plog)
    assert records == [OffsetRecord(b"k0", b"v0", 0), OffsetRecord(b"k1", b"v1", 1)]


def test_no_log_no_records() -> None:
    assert read_for_load("__consumer_offsets-0", lambda: None) == []
