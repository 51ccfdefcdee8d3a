"""Compaction of transactional data (Kafka's LogCleaner with its "transaction metadata"): aborted
transactions' batches removed, markers removed once no batch of their transaction is left and
their delete horizon passed, empty batches kept for producers' last sequences and epochs, the
``.txnindex`` rebuilt. Real logs with a real producer state; the scenarios are those of Kafka's
LogCleanerTest (the same appends, the same expected offsets after each pass)."""

from __future__ import annotations

import pytest

from protocol.records import batch as rb
from protocol.records.control import ControlRecordType, build_control_batch
from storage import records as stored_records
from storage.config import LogConfig
from storage.log import PartitionLog
from storage.manager import LogManager
from storage.producer_state import ProducerStateManager
from storage.txn_index import AbortedTxn
from tests.unit.storage.util import FakeClock, make_batch, parse_kafka_python

RETENTION_MS = 1000
COMPACT = {
    "cleanup.policy": "compact",
    "segment.bytes": 100_000,
    "delete.retention.ms": RETENTION_MS,
    "min.cleanable.dirty.ratio": 0.01,
}


class TxnLog:
    """A compacted log with its producer state, and appends as Kafka's tests make them."""

    def __init__(self, tmp_path, overrides=None) -> None:  # type: ignore[no-untyped-def]
        self.clock = FakeClock()
        self.manager = LogManager([tmp_path], LogConfig(), self.clock)
        self.manager.startup()
        self.log: PartitionLog = self.manager.get_or_create_log(
            "t", 0, config_overrides={**COMPACT, **(overrides or {})}
        )
        self.state = ProducerStateManager.attach(self.log, clock=self.clock)
        self.sequences: dict[int, int] = {}

    def txn(self, pid: int, keys: list[int], *, epoch: int = 0) -> None:
        """One transactional batch of ``keys`` (key and value the number) from ``pid``."""
        seq = self.sequences.get(pid, 0)
        self.sequences[pid] = seq + len(keys)
        encoded = [b"%d" % k for k in keys]
        self.log.append(
            make_batch(
                len(keys),
                keys=encoded,
                values=encoded,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                transactional=True,
                timestamp=self.clock.now_ms,
            ),
            leader_epoch=0,
        )

    def plain(self, key: int, value: int) -> None:
        self.log.append(
            make_batch(1, keys=[b"%d" % key], values=[b"%d" % value], timestamp=self.clock.now_ms),
            leader_epoch=0,
        )

    def marker(self, pid: int, commit: bool, *, epoch: int = 0) -> None:
        batch = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_epoch=0,
            timestamp=self.clock.now_ms,
        )
        self.log.append(bytearray(batch), leader_epoch=0)

    def roll(self) -> None:
        self.log.roll()

    def clean(self, now_ms: int | None = None, *, from_start: bool = False) -> None:
        """One pass; ``from_start``: the whole log counts as dirty (Kafka's tests cleaning
        from offset 0 again)."""
        cleaner = self.manager.cleaner
        assert cleaner is not None
        if from_start:
            cleaner.forget(("t", 0))
        cleaner.clean(self.log, self.clock.now_ms if now_ms is None else now_ms)

    def two_pass_clean(self) -> None:
        """Kafka's runTwoPassClean: the first pass (over the whole log) stamps delete horizons,
        the second (after delete.retention.ms, which makes the cleaner clean again) acts on
        them."""
        self.clean(from_start=True)
        self.clock.advance(RETENTION_MS + 1)
        self.clean()

    # -- what the log holds ------------------------------------------------------------------

    def batches(self) -> list[tuple[rb.BatchHeader, list[stored_records.Record]]]:
        out = []
        for segment in self.log.segments:
            data = segment.log.pread(segment.size, 0)
            for pos, header in rb.iter_batches(data):
                out.append((header, stored_records.decode(data, pos).records))
        return out

    def keys(self) -> list[int]:
        """Kafka's keysInLog: keys of the data records with a value."""
        return [
            int(r.key)
            for h, records in self.batches()
            if not h.is_control
            for r in records
            if r.key is not None and r.value is not None
        ]

    def offsets(self) -> list[int]:
        """Kafka's offsetsInLog: offsets of every record with a key and a value (markers too)."""
        return [
            r.offset
            for _, records in self.batches()
            for r in records
            if r.key is not None and r.value is not None
        ]

    def last_offsets(self) -> list[int]:
        """Kafka's lastOffsetsPerBatchInLog."""
        return [h.last_offset for h, _ in self.batches()]

    def aborted(self) -> list[AbortedTxn]:
        return self.log.collect_aborted_transactions(0, 100)

    def close(self) -> None:
        self.manager.shutdown()


@pytest.fixture
def tlog(tmp_path):  # type: ignore[no-untyped-def]
    t = TxnLog(tmp_path)
    yield t
    t.close()


def test_basic_transaction_aware_cleaning(tlog: TxnLog) -> None:
    tlog.txn(1, [1, 2])  # 0-1
    tlog.txn(2, [2, 3])  # 2-3
    tlog.txn(1, [3, 4])  # 4-5
    tlog.marker(1, False)  # 6
    tlog.marker(2, True)  # 7
    tlog.txn(1, [2])  # 8
    tlog.marker(1, True)  # 9
    aborted = tlog.aborted()
    assert aborted == [AbortedTxn(1, 0, 6, 2)]
    tlog.roll()
    tlog.clean()
    # the aborted 1, 2 (offsets 0-1) and 3, 4 (4-5) went without hiding 2 and 3 of producer 2
    assert tlog.keys() == [3, 2]
    assert tlog.offsets() == [3, 6, 7, 8, 9]
    # the index still answers read_committed fetches the same
    assert tlog.aborted() == aborted


def test_aborted_records_never_hide_committed_values(tlog: TxnLog) -> None:
    tlog.plain(7, 1)  # 0: committed value of key 7
    tlog.txn(5, [7])  # 1: an aborted write of key 7
    tlog.marker(5, False)  # 2
    tlog.plain(8, 1)  # 3
    tlog.roll()
    tlog.clean()
    values = {
        int(r.key): int(r.value)
        for h, recs in tlog.batches()
        if not h.is_control
        for r in recs
        if r.key is not None and r.value is not None
    }
    assert values == {7: 1, 8: 1}


def test_clean_with_transactions_spanning_segments(tlog: TxnLog) -> None:
    t = tlog
    t.txn(1, [1, 2])
    t.txn(3, [2, 3])
    t.txn(2, [3, 4])
    t.roll()
    t.txn(2, [5, 6])
    t.txn(3, [6, 7])
    t.txn(1, [7, 8])
    t.marker(2, False)
    t.txn(3, [8, 9])
    t.marker(3, True)
    t.txn(1, [9, 10])
    t.marker(1, False)
    # only the first segment is cleaned (the second is active)
    t.clean()
    assert t.keys() == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    t.roll()
    t.txn(2, [11])
    t.txn(1, [12])
    # only producer 3's keys remain of the aborted and committed transactions
    t.clean()
    assert t.keys() == [2, 3, 6, 7, 8, 9, 11, 12]


def test_commit_marker_removal(tlog: TxnLog) -> None:
    tlog.txn(1, [1])
    tlog.txn(1, [2, 3])
    tlog.marker(1, True)  # 3
    tlog.txn(1, [2])
    tlog.marker(1, True)  # 5
    tlog.roll()
    # the marker stays: its transaction still has records
    tlog.clean()
    assert tlog.keys() == [1, 3, 2]
    assert tlog.offsets() == [0, 2, 3, 4, 5]
    tlog.txn(1, [1, 3])
    tlog.marker(1, True)
    tlog.roll()
    # the first transaction's records are gone now; its marker (3) stays this pass
    tlog.clean()
    assert tlog.keys() == [2, 1, 3]
    assert tlog.offsets() == [3, 4, 5, 6, 7, 8]
    # stamped with a delete horizon, not removed before it
    tlog.clean(from_start=True)
    assert tlog.offsets() == [3, 4, 5, 6, 7, 8]
    marker = next(h for h, _ in tlog.batches() if h.base_offset == 3)
    assert marker.is_control and stored_records.delete_horizon_ms(marker) == (
        tlog.clock.now_ms + RETENTION_MS
    )
    tlog.clock.advance(RETENTION_MS + 1)
    tlog.clean()  # the horizon passed: the log is cleaned again though nothing is dirty
    assert tlog.keys() == [2, 1, 3]
    assert tlog.offsets() == [4, 5, 6, 7, 8]


def test_deleted_batches_with_no_messages_read(tlog: TxnLog) -> None:
    tlog.txn(1, [1])
    tlog.marker(1, False)
    tlog.txn(1, [2])
    tlog.txn(1, [2])
    tlog.marker(1, True)
    tlog.roll()
    tlog.clean()
    assert tlog.keys() == [2]
    assert tlog.offsets() == [1, 3, 4]
    # the abort marker (1) gets its horizon, then goes
    tlog.two_pass_clean()
    assert tlog.keys() == [2]
    assert tlog.offsets() == [3, 4]


def test_commit_marker_retention_with_empty_batch(tlog: TxnLog) -> None:
    tlog.txn(1, [2, 3])  # 0, 1
    tlog.roll()
    tlog.txn(2, [2, 3])  # 2, 3
    tlog.marker(2, True)  # 4
    tlog.roll()
    tlog.plain(2, 2)  # 5
    tlog.plain(3, 3)  # 6
    tlog.marker(1, True)  # 7
    tlog.roll()
    # the records go; the producers' last batches stay empty
    tlog.clean()
    assert tlog.keys() == [2, 3]
    assert tlog.offsets() == [4, 5, 6, 7]
    assert tlog.last_offsets() == [1, 3, 4, 5, 6, 7]
    empty = tlog.batches()[0]
    assert empty[0].record_count == 0 and empty[0].producer_id == 1
    # again: the empty batches hold the last sequences
    tlog.clean(from_start=True)
    assert tlog.offsets() == [4, 5, 6, 7]
    assert tlog.last_offsets() == [1, 3, 4, 5, 6, 7]
    # producer 2 writes again: its empty batch may go
    tlog.txn(2, [1])  # 8
    tlog.marker(2, True)  # 9
    tlog.roll()
    tlog.clean()
    assert tlog.keys() == [2, 3, 1]
    assert tlog.offsets() == [4, 5, 6, 7, 8, 9]
    assert tlog.last_offsets() == [1, 4, 5, 6, 7, 8, 9]
    # the first commit of producer 2 (4) gets its horizon, then goes
    tlog.two_pass_clean()
    assert tlog.keys() == [2, 3, 1]
    assert tlog.offsets() == [5, 6, 7, 8, 9]
    assert tlog.last_offsets() == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch(tlog: TxnLog) -> None:
    tlog.marker(1, True)  # 0: a marker without a transaction
    tlog.plain(2, 2)  # 1
    tlog.plain(3, 3)  # 2
    tlog.roll()
    # the marker is emptied (it carries producer 1's epoch), not removed
    tlog.two_pass_clean()
    assert tlog.keys() == [2, 3]
    assert tlog.offsets() == [1, 2]
    assert tlog.last_offsets() == [0, 1, 2]
    assert tlog.batches()[0][0].is_control and tlog.batches()[0][0].record_count == 0
    # cleaning the empty control batch again changes nothing
    tlog.clean(tlog.clock.now_ms + 10**9, from_start=True)
    assert tlog.offsets() == [1, 2]
    assert tlog.last_offsets() == [0, 1, 2]


def test_committed_transaction_spanning_segments(tlog: TxnLog) -> None:
    tlog.txn(1, [1])
    tlog.roll()
    tlog.marker(1, True)
    tlog.roll()
    tlog.two_pass_clean()
    assert tlog.offsets() == [0, 1]
    assert tlog.last_offsets() == [0, 1]


def test_aborted_transaction_spanning_segments(tlog: TxnLog) -> None:
    tlog.txn(1, [1])
    tlog.roll()
    tlog.marker(1, False)
    tlog.roll()
    # the batch stays empty (its producer's last), the marker with it
    tlog.clean()
    assert tlog.offsets() == [1]
    assert tlog.last_offsets() == [0, 1]
    tlog.clean(tlog.clock.now_ms + 10**9, from_start=True)
    assert tlog.offsets() == [1]
    assert tlog.last_offsets() == [0, 1]
    assert tlog.aborted() == [AbortedTxn(1, 0, 1, 2)]


def test_abort_marker_removal(tlog: TxnLog) -> None:
    tlog.txn(1, [1])
    tlog.txn(1, [2, 3])
    tlog.marker(1, False)  # 3
    tlog.txn(1, [3])
    tlog.marker(1, True)  # 5
    tlog.roll()
    # the aborted records go; the abort marker stays (this pass read its batches)
    tlog.clean()
    assert tlog.keys() == [3]
    assert tlog.offsets() == [3, 4, 5]
    assert tlog.aborted() == [AbortedTxn(1, 0, 3, 4)]
    tlog.two_pass_clean()
    assert tlog.keys() == [3]
    assert tlog.offsets() == [4, 5]
    # nothing of the aborted transaction is left: its index entry went with its marker
    assert tlog.aborted() == []


def test_abort_marker_retention_with_empty_batch(tlog: TxnLog) -> None:
    tlog.txn(1, [2, 3])  # 0-1
    tlog.marker(1, False)  # 2
    tlog.roll()
    entry = AbortedTxn(1, 0, 2, 3)
    assert tlog.aborted() == [entry]
    tlog.clean()
    assert tlog.aborted() == [entry]
    assert tlog.keys() == []
    assert tlog.offsets() == [2]  # the abort marker stays
    assert tlog.last_offsets() == [1, 2]  # and the empty batch
    tlog.two_pass_clean()
    assert tlog.aborted() == [entry]
    assert tlog.offsets() == [2]
    assert tlog.last_offsets() == [1, 2]
    # a new transaction of the producer (committed: the cleaner never passes the last stable
    # offset, where Kafka's test calls the cleaner directly): the empty batch may go
    tlog.txn(1, [1])  # 3
    tlog.marker(1, True)  # 4
    tlog.roll()
    tlog.clean(from_start=True)
    assert tlog.aborted() == [entry]
    assert tlog.keys() == [1]
    assert tlog.offsets() == [2, 3, 4]  # the abort marker stays: this pass read the empty batch
    assert tlog.last_offsets() == [2, 3, 4]
    tlog.two_pass_clean()
    assert tlog.keys() == [1]
    assert tlog.offsets() == [3, 4]
    assert tlog.last_offsets() == [3, 4]
    # nothing of the aborted transaction is left: no index entry either
    assert tlog.aborted() == []


def test_nothing_at_or_after_the_last_stable_offset_is_cleaned(tlog: TxnLog) -> None:
    tlog.plain(1, 1)  # 0
    tlog.plain(1, 2)  # 1
    tlog.roll()
    tlog.txn(9, [1])  # 2: an open transaction
    tlog.roll()
    tlog.plain(1, 3)  # 3
    tlog.roll()
    assert tlog.log.last_stable_offset == 2
    tlog.clean()
    # only the segment below the open transaction's was cleaned
    assert tlog.offsets() == [1, 2, 3]
    tlog.marker(9, False)
    tlog.roll()
    tlog.clean()
    assert tlog.keys() == [1]
    assert tlog.offsets()[0] == 3


def test_clients_read_cleaned_transactional_batches(tlog: TxnLog) -> None:
    tlog.txn(1, [1, 2])
    tlog.marker(1, False)
    tlog.txn(2, [1])
    tlog.marker(2, True)
    tlog.roll()
    tlog.two_pass_clean()
    data = tlog.log.read_batches(0)
    # kafka-python reads the empty, rebuilt and stamped batches (CRCs checked)
    assert [offsets for _, offsets, _ in parse_kafka_python(data)] == [[], [2], [3], [4]]


def test_cleaned_txnindex_survives_a_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = TxnLog(tmp_path)
    t.txn(1, [1, 2])
    t.marker(1, False)  # 2
    t.txn(2, [3])  # 3
    t.marker(2, True)  # 4
    t.plain(9, 9)
    t.roll()
    t.clean()
    entries = t.aborted()
    assert entries == [AbortedTxn(1, 0, 2, 3)]
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert not [n for n in names if n.endswith((".cleaned", ".swap"))]
    assert "00000000000000000000.txnindex" in names
    t.close()
    again = TxnLog(tmp_path)
    assert again.aborted() == entries
    assert again.offsets() == [2, 3, 4, 5]
    again.close()
