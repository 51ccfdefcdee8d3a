"""Transactional offset commits against regular ones (Kafka's OffsetMetadataManager): when a
transaction commits, its pending offset of a partition applies only if its record is later in
``__consumer_offsets`` than the record of the offset committed now, live and when the partition
is loaded again; tombstones drop pending offsets too."""

from __future__ import annotations

from coordination.group.config import partition_for
from coordination.group.metadata import OffsetAndMetadata
from coordination.group.records import offset_commit_key, offset_commit_value
from coordination.runtime.runtime import OffsetRecord, TransactionalRecord, TransactionMarker
from protocol.error_codes import ErrorCode
from tests.unit.coordination.test_group_coordinator import Harness

E = ErrorCode
TP = ("t", 0)
GROUP = "eos"
PID = 7


def plain_commit(h: Harness, offset: int) -> None:
    assert h.commit_offsets(
        group_id=GROUP,
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={TP: OffsetAndMetadata(offset, -1, "", h.sched.now)},
    ) == {TP: E.NONE}


def txn_commit(h: Harness, offset: int, *, group: str = GROUP, tp: tuple[str, int] = TP) -> None:
    out: list[dict[tuple[str, int], ErrorCode]] = []
    h.gc.txn_commit_offsets(
        group_id=group,
        producer_id=PID,
        producer_epoch=0,
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={tp: OffsetAndMetadata(offset, -1, "", h.sched.now)},
        callback=out.append,
    )
    assert out == [{tp: E.NONE}]


def committed(h: Harness) -> int | None:
    err, got = h.gc.fetch_offsets(group_id=GROUP, partitions=[TP])
    assert err == E.NONE
    oam = got[TP]
    assert not isinstance(oam, ErrorCode)
    return None if oam is None else oam.offset


def complete(h: Harness, committed_: bool = True) -> None:
    h.gc.complete_transaction(partition_for(GROUP, 4), PID, committed_)


def test_a_regular_commit_written_after_the_transactional_one_wins() -> None:
    h = Harness()
    txn_commit(h, 5)  # record 0, pending
    plain_commit(h, 9)  # record 1
    assert committed(h) == 9
    complete(h)  # the marker comes last, but the transactional record is older
    assert committed(h) == 9


def test_a_transactional_commit_written_after_the_regular_one_wins() -> None:
    h = Harness()
    plain_commit(h, 9)  # record 0
    txn_commit(h, 5)  # record 1
    assert committed(h) == 9
    complete(h)
    assert committed(h) == 5


def test_an_abort_drops_the_pending_offset() -> None:
    h = Harness()
    plain_commit(h, 9)
    txn_commit(h, 5)
    complete(h, False)
    assert committed(h) == 9


def test_the_rule_holds_when_the_partition_is_loaded_again() -> None:
    p = partition_for(GROUP, 4)
    key = offset_commit_key(GROUP, *TP)

    def load(records: list[object]) -> int | None:
        h = Harness(load=False)
        for q in range(4):
            assert h.gc.complete_loading(q, h.gc.begin_loading(q), records if q == p else [])
        return committed(h)

    txn_first = [
        TransactionalRecord(PID, key, offset_commit_value(5, -1, "", 1), 10),
        OffsetRecord(key, offset_commit_value(9, -1, "", 1), 11),
        TransactionMarker(PID, True),
    ]
    assert load(txn_first) == 9
    plain_first = [
        OffsetRecord(key, offset_commit_value(9, -1, "", 1), 10),
        TransactionalRecord(PID, key, offset_commit_value(5, -1, "", 1), 11),
        TransactionMarker(PID, True),
    ]
    assert load(plain_first) == 5
    # a tombstone between the transactional commit and its marker drops it
    deleted = [
        TransactionalRecord(PID, key, offset_commit_value(5, -1, "", 1), 10),
        OffsetRecord(key, None, 11),
        TransactionMarker(PID, True),
    ]
    assert load(deleted) is None
    # records replayed without offsets (older callers) keep applying at the marker
    assert load([(key, offset_commit_value(9, -1, "", 1)), *txn_first[::2]]) == 5


def test_deleting_offsets_drops_pending_transactional_ones() -> None:
    h = Harness()
    plain_commit(h, 9)
    txn_commit(h, 5)
    err, results = h.delete_offsets(group_id=GROUP, partitions=[TP])
    assert err == E.NONE and results == {TP: E.NONE}
    complete(h)
    assert committed(h) is None
