"""The replication rules of a Partition over real logs, with the ISR writes played by a fake
manager: the high watermark as the ISR's lowest log end, ISR expansion and shrink, acks=all
answers, commit callbacks, follower appends and the divergence answer; and the follower's
truncation rule (KIP-101/279)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.purgatory import DelayedOperationPurgatory
from broker.replication.fetcher import (
    FetcherConfig,
    PartitionFetchState,
    ReplicaFetcherThread,
    truncation_offset,
)
from broker.replication.log_validator import TopicRules
from broker.replication.partition import DivergingEpoch, FetchIsolation, Partition, TopicPartition
from coordination.errors import KafkaApiError
from coordination.metadata.view import LeaderAndIsr, PartitionState
from protocol.error_codes import ErrorCode
from protocol.records.record import build_empty_batch as empty_batch
from storage.manager import LogManager
from storage.producer_state import ProducerStateManager
from tests.unit.storage.util import make_batch

NOW = 1_700_000_000_000


class Clock:
    def __init__(self) -> None:
        self.ms = NOW

    def __call__(self) -> int:
        return self.ms


class FakeIsrManager:
    """Records proposals; the test decides when one is written."""

    def __init__(self) -> None:
        self.proposals: list[tuple[Partition, LeaderAndIsr, int]] = []

    def submit(self, partition: Partition, change: LeaderAndIsr, *, partition_epoch: int) -> None:
        self.proposals.append((partition, change, partition_epoch))

    def write_last(self) -> PartitionState:
        part, change, epoch = self.proposals[-1]
        state = PartitionState(
            part.index, change.leader, change.leader_epoch, part.replicas, change.isr, epoch + 1
        )
        part.isr_change_written(state)
        return state


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    m = LogManager([tmp_path / "logs"])
    m.startup()
    yield m
    m.shutdown()


def partition(
    manager: LogManager,
    *,
    broker_id: int = 1,
    leader: int = 1,
    isr: tuple[int, ...] = (1, 2, 3),
    epoch: int = 5,
    name: str = "t",
    min_isr: int = 2,
) -> tuple[Partition, FakeIsrManager, Clock]:
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
    isr_manager = FakeIsrManager()
    clock = Clock()
    part = Partition(
        name,
        0,
        uuid.uuid4(),
        manager.get_or_create_log(name, 0),
        TopicRules(),
        broker_id=broker_id,
        state=PartitionState(0, leader, epoch, (1, 2, 3), isr, 10),
        fetch_purgatory=purgatory,
        produce_purgatory=DelayedOperationPurgatory("Produce"),
        isr_manager=isr_manager,
        replica_lag_time_max_ms=1000,
        min_insync_replicas=min_isr,
        clock=clock,
    )
    return part, isr_manager, clock


def append(part: Partition, count: int = 2, acks: int = 1) -> int:
    info = part.append_records_to_leader(
        memoryview(make_batch(count, timestamp=NOW)), api_version=9, now_ms=NOW, required_acks=acks
    )
    return info.last_offset + 1


def follower_fetch(part: Partition, replica: int, offset: int, last_epoch: int = -1) -> object:
    return part.read_for_follower(
        replica,
        offset,
        1 << 20,
        current_leader_epoch=part.leader_epoch,
        last_fetched_epoch=last_epoch,
        follower_log_start_offset=0,
        min_one_batch=True,
    )


def test_the_high_watermark_is_the_isrs_lowest_log_end(manager: LogManager) -> None:
    part, _, _ = partition(manager)
    end = append(part, 4)
    assert part.high_watermark == 0  # the followers have nothing yet
    assert part.read_records(
        0, 1 << 20, current_leader_epoch=-1, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True,
    ).region is None  # fmt: skip
    follower_fetch(part, 2, end)
    assert part.high_watermark == 0  # replica 3 still at 0
    follower_fetch(part, 3, 2)
    assert part.high_watermark == 2
    follower_fetch(part, 3, end)
    assert part.high_watermark == end
    assert part.bytes_visible > 0


def test_acks_all_waits_for_the_isr_and_refuses_below_min_insync(manager: LogManager) -> None:
    part, isr, clock = partition(manager)
    end = append(part, 2, acks=-1)
    taken = part.leadership_epoch
    assert part.check_enough_replicas_reach_offset(end, taken) is None
    follower_fetch(part, 2, end)
    follower_fetch(part, 3, end)
    assert part.check_enough_replicas_reach_offset(end, taken) == ErrorCode.NONE
    assert part.check_enough_replicas_reach_offset(end, taken - 1) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    # replicas 2 and 3 fall behind: proposed out, then written out
    end = append(part, 2, acks=-1)
    clock.ms += 5000
    part.maybe_shrink_isr()
    _, change, _ = isr.proposals[-1]
    assert change.isr == (1,)
    isr.write_last()
    assert part.isr == (1,)
    assert part.high_watermark == end  # the leader alone is the ISR now
    assert part.check_enough_replicas_reach_offset(end, taken) == (
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )
    with pytest.raises(Exception) as refused:
        append(part, 1, acks=-1)
    assert getattr(refused.value, "error_code", None) == ErrorCode.NOT_ENOUGH_REPLICAS
    append(part, 1, acks=1)  # acks=1 still works


def test_a_follower_that_caught_up_is_proposed_back_into_the_isr(manager: LogManager) -> None:
    part, isr, _ = partition(manager, isr=(1, 2))
    end = append(part, 3)
    follower_fetch(part, 2, end)
    assert part.high_watermark == end
    follower_fetch(part, 3, 1)
    assert isr.proposals == []  # below the high watermark: not yet
    follower_fetch(part, 3, end)
    _, change, epoch = isr.proposals[-1]
    assert change.isr == (1, 2, 3) and epoch == 10
    assert part.maximal_isr == (1, 2, 3)  # counted for the high watermark already
    # no second proposal while one is in flight
    follower_fetch(part, 3, end)
    assert len(isr.proposals) == 1
    state = isr.write_last()
    assert part.isr == (1, 2, 3) and part.partition_epoch == state.partition_epoch
    assert part.pending_isr is None


def test_commit_callbacks_run_once_committed_or_fail_when_leadership_moves(
    manager: LogManager,
) -> None:
    part, _, _ = partition(manager)
    results: list[ErrorCode | None] = []
    end = append(part, 2)
    part.when_committed(end, results.append)
    assert results == []
    follower_fetch(part, 2, end)
    follower_fetch(part, 3, end)
    assert results == [None]
    end = append(part, 1)
    part.when_committed(end, results.append)
    part.update_state(PartitionState(0, 2, part.leader_epoch + 1, (1, 2, 3), (2, 3), 11))
    assert results == [None, ErrorCode.NOT_LEADER_OR_FOLLOWER]


def test_a_diverged_follower_is_told_where_the_logs_agree(manager: LogManager) -> None:
    part, _, _ = partition(manager, epoch=5)
    append(part, 3)  # offsets 0-2 at epoch 5
    part.update_state(PartitionState(0, 1, 7, (1, 2, 3), (1, 2, 3), 11))
    end = append(part, 2)  # offsets 3-4 at epoch 7
    # a follower whose last batch is of epoch 6 (which this leader never had), at offset 6
    result = follower_fetch(part, 2, 6, last_epoch=6)
    assert result.diverging_epoch == DivergingEpoch(5, 3)  # type: ignore[attr-defined]
    # one in step gets records
    result = follower_fetch(part, 2, 3, last_epoch=5)
    assert result.diverging_epoch is None and result.region is not None  # type: ignore[attr-defined]
    assert end == 5


def test_stale_states_are_ignored(manager: LogManager) -> None:
    part, _, _ = partition(manager)
    current = part.state
    part.update_state(replace(current, leader=2, leader_epoch=current.leader_epoch - 1))
    assert part.is_leader
    part.update_state(replace(current, isr=(1,), partition_epoch=current.partition_epoch - 1))
    assert part.isr == (1, 2, 3)


def test_follower_appends_take_the_leaders_high_watermark(manager: LogManager) -> None:
    leader, _, _ = partition(manager, name="lead")
    end = append(leader, 3)
    follower, _, _ = partition(manager, broker_id=2, name="follow")
    data = leader.log.read_batches(0)
    assert (
        follower.append_as_follower(
            memoryview(data), leader_epoch=4, leader_high_watermark=2, leader_log_start_offset=0
        )
        is None
    )  # not at the follower's leader epoch: nothing appended
    info = follower.append_as_follower(
        memoryview(data), leader_epoch=5, leader_high_watermark=2, leader_log_start_offset=0
    )
    assert info is not None and follower.log_end_offset == end
    assert follower.high_watermark == 2
    assert follower.log.read_batches(0) == data  # the leader's bytes, as they are


def test_followers_replicate_what_producers_may_not_write(manager: LogManager) -> None:
    """A leader's log holds transaction markers (control batches), coordinators' transactional
    batches without sequences and the empty batches compaction keeps: followers take them as
    they are (Kafka's follower append checks CRCs, not producer rules)."""
    leader, _, _ = partition(manager, name="lead-txn")
    leader.append_batches_to_leader(
        bytearray(
            make_batch(2, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
        ),
        now_ms=1,
    )
    leader.append_txn_marker(
        producer_id=7, producer_epoch=0, committed=True, coordinator_epoch=0, now_ms=1
    )
    # a TxnOffsetCommit's batch: a producer id, no sequence
    leader.append_batches_to_leader(
        bytearray(make_batch(1, producer_id=8, producer_epoch=0, transactional=True)), now_ms=1
    )
    follower, _, _ = partition(manager, broker_id=2, name="follow-txn")
    ProducerStateManager.attach(follower.log)
    data = leader.log.read_batches(0)
    info = follower.append_as_follower(
        memoryview(data), leader_epoch=5, leader_high_watermark=4, leader_log_start_offset=0
    )
    assert info is not None and follower.log_end_offset == leader.log_end_offset == 4
    assert follower.log.read_batches(0) == data
    assert follower.in_transaction(8) and not follower.in_transaction(7)
    # an empty batch (what compaction leaves of a producer's last batch)
    empty = empty_batch(
        base_offset=4,
        last_offset_delta=1,
        partition_leader_epoch=5,
        timestamp_type=0,
        max_timestamp=1,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        transactional=False,
        control=False,
    )
    follower.append_as_follower(
        memoryview(empty), leader_epoch=5, leader_high_watermark=6, leader_log_start_offset=0
    )
    assert follower.log_end_offset == 6
    # a corrupt batch is still refused
    bad = bytearray(make_batch(1))
    bad[-1] ^= 0xFF
    with pytest.raises(KafkaApiError):
        follower.append_as_follower(
            memoryview(bad), leader_epoch=5, leader_high_watermark=6, leader_log_start_offset=0
        )


def test_truncation_offsets(manager: LogManager) -> None:
    part, _, _ = partition(manager, epoch=2)
    append(part, 3)  # 0-2 at epoch 2
    part.update_state(PartitionState(0, 1, 4, (1, 2, 3), (1, 2, 3), 11))
    append(part, 3)  # 3-5 at epoch 4
    plog = part.log
    # the leader has our epoch 4, ending at 4: truncate to 4
    assert truncation_offset(plog, 4, 4) == (4, True)
    # the leader's largest epoch at or below ours is 3 (we have none): to our end of epoch 2
    # (3), and ask again
    assert truncation_offset(plog, 3, 5) == (3, False)
    # the leader knows none of our epochs: to the high watermark
    assert truncation_offset(plog, -1, -1) == (min(plog.high_watermark, 6), True)
    # the leader has epoch 2 ending later than ours: keep ours
    assert truncation_offset(plog, 2, 10) == (3, True)


def test_acks_all_survives_an_epoch_bump_but_not_a_lost_leadership(manager: LogManager) -> None:
    part, _, _ = partition(manager)
    taken = part.leadership_epoch
    end = append(part, 2, acks=-1)
    # the controller removes a dead follower: a new leader epoch, the same leader
    part.update_state(PartitionState(0, 1, part.leader_epoch + 1, (1, 2, 3), (1, 2), 11))
    assert part.leadership_epoch == taken
    follower_fetch(part, 2, end)
    assert part.check_enough_replicas_reach_offset(end, taken) == ErrorCode.NONE
    # leadership lost and taken back: the old append's answer is NOT_LEADER_OR_FOLLOWER
    part.update_state(PartitionState(0, 2, part.leader_epoch + 1, (1, 2, 3), (2, 1), 12))
    part.update_state(PartitionState(0, 1, part.leader_epoch + 1, (1, 2, 3), (1, 2), 13))
    assert part.leadership_epoch != taken
    assert part.check_enough_replicas_reach_offset(end, taken) == (ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_commit_callbacks_due_when_the_isr_shrinks_by_the_controller(
    manager: LogManager,
) -> None:
    part, _, _ = partition(manager)
    results: list[ErrorCode | None] = []
    end = append(part, 2)
    follower_fetch(part, 2, end)
    part.when_committed(end, results.append)
    assert results == []  # replica 3 has not fetched
    # replica 3 dies: the controller writes the ISR without it (and a new epoch)
    part.update_state(PartitionState(0, 1, part.leader_epoch + 1, (1, 2, 3), (1, 2), 11))
    assert results == [None]


def test_an_epoch_led_without_appending_goes_when_its_leader_follows(
    manager: LogManager,
) -> None:
    """A broker elected leader writes its epoch's start at its log end; replaced before it
    appended anything, it follows a leader that never had that epoch. Its truncation point is
    its log end, and the epoch's entry goes all the same (Kafka's UnifiedLog.truncateTo): kept,
    it was the follower's last fetched epoch, and the leader answered a diverging epoch on
    every fetch while the follower found nothing to truncate (seen in the rolling restart test:
    the follower left the ISR 30 s later and never came back)."""
    old, _, _ = partition(manager, name="old", broker_id=2, leader=2, epoch=1)
    new, _, _ = partition(manager, name="new", broker_id=3, leader=3, epoch=1)
    assert append(old, 3) == append(new, 3) == 3  # both hold 0-2 at epoch 1
    old.update_state(PartitionState(0, 2, 2, (1, 2, 3), (1, 2, 3), 11))  # elected; appends nothing
    assert old.latest_epoch() == 2
    new.update_state(PartitionState(0, 3, 3, (1, 2, 3), (1, 2, 3), 12))  # the next leader
    append(new, 2)
    old.update_state(PartitionState(0, 3, 3, (1, 2, 3), (1, 2, 3), 12))  # follows it
    # OffsetForLeaderEpoch for epoch 2: the leader's largest epoch at or below it is 1, ending at 3
    epoch, end = new.log.end_offset_for_epoch(old.latest_epoch())
    assert (epoch, end) == (1, 3)
    offset, complete = truncation_offset(old.log, epoch, end)
    assert (offset, complete) == (3, True)  # the log end: no batch to remove
    assert not old.truncate_to(offset, leader_epoch=3)
    assert old.latest_epoch() == 1
    assert [e.epoch for e in old.log.leader_epoch_cache.entries] == [1]
    result = follower_fetch(new, 2, old.log_end_offset, last_epoch=old.latest_epoch())
    assert result.diverging_epoch is None and result.region is not None  # type: ignore[attr-defined]


def test_a_follower_making_no_progress_is_reported_with_what_holds_it_back(
    manager: LogManager, caplog: pytest.LogCaptureFixture
) -> None:
    """The fetcher retries a leader's NOT_LEADER_OR_FOLLOWER (and a diverging epoch that
    changes nothing) without a line each time; a partition with no batch appended and not caught
    up for ``replica.lag.time.max.ms`` is logged once per that period, with the last answer that
    held it back; progress silences it, and so does being caught up (a caught-up partition is
    left out of incremental fetch responses for as long as nothing new arrives)."""
    part, _, _ = partition(manager, broker_id=2, leader=1, epoch=5)
    fetcher = ReplicaFetcherThread(
        FetcherConfig(broker_id=2, stall_report_ms=30000),
        1,
        0,
        lambda: None,  # type: ignore[arg-type,return-value]
    )
    key = ("t", 0)
    state = PartitionFetchState(part, 5)
    state.truncating = False
    fetcher.add({key: state})

    def answer(error: ErrorCode = ErrorCode.NONE, records: bytes = b"", hw: int = 0) -> object:
        return SimpleNamespace(
            error_code=error,
            diverging_epoch=None,
            records=memoryview(records),
            high_watermark=hw,
            log_start_offset=0,
        )

    caplog.set_level(logging.INFO, logger="broker.replication.fetcher")
    fetcher._process(key, state, answer(ErrorCode.NOT_LEADER_OR_FOLLOWER))
    fetcher._report_stalls({key: state})
    assert "no progress" not in caplog.text  # not yet: an election is usually over in a second
    assert "NOT_LEADER_OR_FOLLOWER" not in caplog.text  # nor each retry
    state.progress_at -= 31

    def scan() -> None:
        fetcher._next_stall_scan = 0.0  # the thread looks at most once a second
        fetcher._report_stalls({key: state})

    scan()
    scan()
    stalls = [r.getMessage() for r in caplog.records if "no progress" in r.getMessage()]
    assert len(stalls) == 1  # once per period
    assert "t-0: no progress fetching from broker 1 for 31 s" in stalls[0]
    assert "the leader answered NOT_LEADER_OR_FOLLOWER" in stalls[0]

    # batches appended (still behind): progress, seen when the thread looks, so no report
    batch = make_batch(3, timestamp=NOW)
    state.lag = fetcher._process(key, state, answer(records=batch, hw=5))  # as _fetch does
    assert state.lag == 2
    assert part.log_end_offset == 3
    caplog.clear()
    scan()
    assert "no progress" not in caplog.text
    # then nothing more for a period: reported as behind, with no error to name
    state.progress_at -= 31
    scan()
    assert "2 record(s) behind the leader's high watermark, none appended" in caplog.text
    # caught up, then left out of incremental fetch responses (nothing new): not stalled
    assert fetcher._process(key, state, answer(hw=3)) == 0
    caplog.clear()
    state.progress_at -= 31
    scan()
    assert "no progress" not in caplog.text
