"""Transactions in the log (KIP-98): ongoing transactions in the producer state, the last stable
offset, abort markers in Kafka's ``.txnindex`` (34-byte entries built here from the format), the
aborted transactions a read_committed fetch returns, and recovery after a restart."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from protocol.records.control import ControlRecordType, build_control_batch
from storage.config import LogConfig
from storage.loader import load_log
from storage.log import PartitionLog
from storage.producer_state import (
    UNVERIFIED,
    InvalidProducerEpoch,
    InvalidTxnState,
    ProducerStateManager,
    TransactionCoordinatorFenced,
    VerificationGuard,
)
from storage.segment import LogSegment
from storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex
from tests.unit.storage.util import FakeClock, make_batch

SMALL = LogConfig(segment_bytes=100_000, index_interval_bytes=100, segment_index_bytes=4096)


def open_log(tmp_path, *, clean=True) -> tuple[PartitionLog, ProducerStateManager]:
    clock = FakeClock(now_ms=5_000)
    plog = load_log(tmp_path / "t-0", SMALL, clock=clock, had_clean_shutdown=clean)
    return plog, ProducerStateManager.attach(plog, clock=clock)


def txn(plog, pid, seq, count=2, epoch=0):
    return plog.append(
        make_batch(
            count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True
        ),
        leader_epoch=0,
    )


def plain(plog, count=1):
    return plog.append(make_batch(count), leader_epoch=0)


def marker(plog, pid, commit, *, epoch=0, coordinator_epoch=0):
    batch = build_control_batch(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
        producer_id=pid,
        producer_epoch=epoch,
        coordinator_epoch=coordinator_epoch,
        timestamp=1_000,
    )
    return plog.append(bytearray(batch), leader_epoch=0)


def test_entry_bytes_are_kafkas_layout(tmp_path):
    # version int16, producerId int64, firstOffset int64, lastOffset int64, lastStableOffset int64
    expected = struct.pack(">h", 0) + struct.pack(">q", 7) + struct.pack(">qqq", 3, 10, 11)
    assert len(expected) == 34 == ENTRY_SIZE
    assert AbortedTxn(7, 3, 10, 11).encode() == expected
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(expected + struct.pack(">hqqqq", 0, 8, 12, 20, 21) + b"\x00\x01")
    index = TransactionIndex(path, 0)
    assert index.entries == (AbortedTxn(7, 3, 10, 11), AbortedTxn(8, 12, 20, 21))
    assert path.stat().st_size == 68  # the cut entry is dropped


def test_lso_stops_at_the_oldest_open_transaction(tmp_path):
    plog, state = open_log(tmp_path)
    plain(plog)  # 0
    first = txn(plog, 1, 0)  # 1-2
    txn(plog, 2, 0)  # 3-4
    plain(plog)  # 5
    assert plog.high_watermark == 6
    assert plog.last_stable_offset == first.first_offset == 1
    marker(plog, 1, True)  # 6
    assert plog.last_stable_offset == 3
    marker(plog, 2, False)  # 7
    assert plog.last_stable_offset == plog.high_watermark == 8
    assert state.ongoing == {}


def test_abort_writes_the_txnindex_and_fetch_collects_it(tmp_path):
    plog, _ = open_log(tmp_path)
    txn(plog, 1, 0)  # 0-1
    txn(plog, 2, 0)  # 2-3
    marker(plog, 1, False)  # 4: aborted, LSO then is 2 (producer 2 still open)
    txn(plog, 2, 2)  # 5-6
    marker(plog, 2, False)  # 7
    txn(plog, 3, 0)  # 8-9
    marker(plog, 3, True)  # 10
    path = tmp_path / "t-0" / "00000000000000000000.txnindex"
    data = path.read_bytes()
    assert data == AbortedTxn(1, 0, 4, 2).encode() + AbortedTxn(2, 2, 7, 8).encode()
    assert plog.collect_aborted_transactions(0, 11) == [
        AbortedTxn(1, 0, 4, 2),
        AbortedTxn(2, 2, 7, 8),
    ]
    assert plog.collect_aborted_transactions(5, 11) == [AbortedTxn(2, 2, 7, 8)]
    assert plog.collect_aborted_transactions(8, 11) == []


def test_marker_fencing(tmp_path):
    plog, _ = open_log(tmp_path)
    txn(plog, 1, 0, epoch=3)
    with pytest.raises(InvalidProducerEpoch):
        marker(plog, 1, True, epoch=2)
    marker(plog, 1, True, epoch=3, coordinator_epoch=5)
    txn(plog, 1, 2, epoch=3)
    with pytest.raises(TransactionCoordinatorFenced):
        marker(plog, 1, True, epoch=3, coordinator_epoch=4)


@pytest.mark.parametrize("clean", [True, False])
def test_restart_recovers_ongoing_transactions_and_index(tmp_path, clean):
    plog, state = open_log(tmp_path)
    txn(plog, 1, 0)  # 0-1
    marker(plog, 1, False)  # 2
    plain(plog)  # 3
    txn(plog, 2, 0)  # 4-5, left open
    if clean:
        state.take_snapshot()
        plog.close()
    else:
        plog.flush()
    plog2, state2 = open_log(tmp_path, clean=clean)
    assert state2.ongoing == {2: 4}
    assert plog2.last_stable_offset == 4
    assert plog2.collect_aborted_transactions(0, 6) == [AbortedTxn(1, 0, 2, 3)]
    marker(plog2, 2, False)  # 6: the open transaction can still be ended
    assert plog2.last_stable_offset == plog2.high_watermark == 7
    assert plog2.collect_aborted_transactions(3, 7) == [AbortedTxn(2, 4, 6, 7)]


def test_replay_restores_lost_index_entries(tmp_path):
    plog, _ = open_log(tmp_path)
    txn(plog, 1, 0)
    marker(plog, 1, False)
    plog.flush()
    (tmp_path / "t-0" / "00000000000000000000.txnindex").unlink()
    plog2, _ = open_log(tmp_path, clean=False)
    assert plog2.collect_aborted_transactions(0, 3) == [AbortedTxn(1, 0, 2, 3)]


def test_truncation_and_deletion_follow_the_segment(tmp_path):
    plog, _ = open_log(tmp_path)
    txn(plog, 1, 0)  # 0-1
    marker(plog, 1, False)  # 2
    txn(plog, 2, 0)  # 3-4
    marker(plog, 2, False)  # 5
    plog.truncate_to(5)
    assert plog.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 2, 3)]
    plog.roll()
    plain(plog)
    plog.delete_records_before(plog.log_end_offset - 1)
    plog.delete_old_segments()
    plog.delete_pending_files(force=True)
    assert not list((tmp_path / "t-0").glob("00000000000000000000.*"))


def test_kip890_verification_guard(tmp_path):
    """Kafka's VerificationGuard: a batch that would start a transaction needs the guard of its
    verification; a marker (or another transactional batch) of the producer written meanwhile
    voids the guard; once the transaction is open, no guard is needed."""
    plog, state = open_log(tmp_path)

    def txn_with(pid, seq, guard, epoch=0):
        return plog.append(
            make_batch(
                2, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True
            ),
            leader_epoch=0,
            verification=guard,
        )

    guard = state.maybe_start_verification(1, 0, 0)
    assert guard is not None and state.maybe_start_verification(1, 0, 0) is guard
    with pytest.raises(InvalidTxnState):
        txn_with(1, 0, UNVERIFIED)  # not the verification's guard
    with pytest.raises(InvalidTxnState):
        txn_with(1, 0, VerificationGuard())
    first = txn_with(1, 0, guard)
    assert state.verification_guard(1) is None  # used up
    assert state.maybe_start_verification(1, 2, 0) is None  # open here: nothing to verify
    txn_with(1, 2, UNVERIFIED)  # the transaction is open: no guard needed
    assert txn_with(1, 0, UNVERIFIED).first_offset == first.first_offset  # a retry: its offsets
    # a verification overtaken by an abort marker (ABA): its guard no longer counts
    marker(plog, 1, False)
    stale = state.maybe_start_verification(1, 4, 0)
    assert stale is not None
    marker(plog, 1, False, epoch=1)  # the coordinator fenced and aborted meanwhile
    with pytest.raises(InvalidTxnState):
        txn_with(1, 0, stale, epoch=1)
    assert state.ongoing == {}
    # appends that do not verify (followers, coordinators, verification off) are not checked
    txn_with(2, 0, None)
    assert 2 in state.ongoing
    # stale verifications go with producer.id.expiration.ms
    state.maybe_start_verification(3, 0, 0)
    state.remove_expired_producers(state.clock() + state.producer_id_expiration_ms)
    assert state.verification_guard(3) is None


def test_kip890_v2_a_later_epoch_starts_the_next_transaction(tmp_path):
    """Transaction version 2 bumps the epoch with every EndTxn, and the coordinator answers
    before its markers are written: a batch with the bumped epoch while the ended transaction
    is still open here starts the next transaction, so it is verified (added) with the
    coordinator, as Kafka's hasOngoingTransaction compares epochs; without it the old
    transaction's marker would end it too."""
    plog, state = open_log(tmp_path)
    txn(plog, 1, 0, epoch=0)
    assert state.maybe_start_verification(1, 2, 0) is None  # the open transaction's epoch
    guard = state.maybe_start_verification(1, 0, 1)
    assert guard is not None
    with pytest.raises(InvalidTxnState):
        plog.append(
            make_batch(2, producer_id=1, producer_epoch=1, base_sequence=0, transactional=True),
            leader_epoch=0,
            verification=UNVERIFIED,
        )
    # the ended transaction's marker, with the bumped epoch, arrives while the next
    # transaction's batch is being added: its verification still holds
    marker(plog, 1, True, epoch=1)
    assert state.ongoing == {}
    assert state.maybe_start_verification(1, 0, 1) is guard
    appended = plog.append(
        make_batch(2, producer_id=1, producer_epoch=1, base_sequence=0, transactional=True),
        leader_epoch=0,
        verification=guard,
    )
    assert state.ongoing == {1: appended.first_offset}
    # a later marker (that transaction's own end) voids a verification in progress
    marker(plog, 1, False, epoch=2)
    stale = state.maybe_start_verification(1, 2, 2)
    marker(plog, 1, False, epoch=3)
    with pytest.raises(InvalidTxnState):
        plog.append(
            make_batch(1, producer_id=1, producer_epoch=2, base_sequence=2, transactional=True),
            leader_epoch=0,
            verification=stale,
        )


def test_a_new_segments_transaction_index_is_not_read_from_disk(tmp_path, monkeypatch):
    # a new segment has no .txnindex: a read_committed fetch must not try to open one per
    # partition; the first abort creates the file
    segment = LogSegment.create(tmp_path, 0, LogConfig(), created_ms=0)

    def no_read(self: Path) -> bytes:
        raise AssertionError(f"{self} read")

    monkeypatch.setattr(Path, "read_bytes", no_read)
    assert segment.txn_index.collect(0, 100) == ([], False)
    assert segment.txn_index.append(AbortedTxn(7, 3, 10, 11))
    monkeypatch.undo()
    assert TransactionIndex(segment.txn_index.path, 0).entries == (AbortedTxn(7, 3, 10, 11),)
