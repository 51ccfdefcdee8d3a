"""A Partition's rules over a real log: leadership, the KIP-320 epoch fence, appends, reads by
isolation, DeleteRecords bounds, epoch end offsets, and a delayed fetch woken by an append."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.purgatory import DelayedOperationPurgatory
from broker.replication.delayed_fetch import DelayedFetch
from broker.replication.errors import (
    FencedLeaderEpoch,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from broker.replication.log_validator import RecordError, TopicRules
from broker.replication.partition import DivergingEpoch, FetchIsolation, Partition, TopicPartition
from coordination.metadata.view import PartitionState
from protocol.error_codes import ErrorCode
from storage.manager import LogManager
from tests.unit.storage.util import make_batch, record_values

NOW = 1_700_000_000_000


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    m = LogManager([tmp_path / "logs"])
    m.startup()
    yield m
    m.shutdown()


def make_partition(
    manager: LogManager, *, leader: int = 1, epoch: int = 3, replicas: tuple[int, ...] = (1,)
) -> tuple[Partition, DelayedOperationPurgatory[TopicPartition]]:
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
    state = PartitionState(0, leader, epoch, replicas, (1,))
    part = Partition(
        "t",
        0,
        uuid.uuid4(),
        manager.get_or_create_log("t", 0),
        TopicRules(),
        broker_id=1,
        state=state,
        fetch_purgatory=purgatory,
    )
    return part, purgatory


def append(part: Partition, count: int = 2) -> int:
    info = part.append_records_to_leader(
        memoryview(make_batch(count, timestamp=NOW)), api_version=9, now_ms=NOW
    )
    return info.first_offset


def test_appends_as_leader_and_stamps_its_epoch(manager: LogManager) -> None:
    part, _ = make_partition(manager)
    assert append(part) == 0
    assert append(part, 3) == 2
    assert part.log_end_offset == part.high_watermark == 5
    assert part.bytes_visible > 0
    assert part.last_offset_for_leader_epoch(3, current_leader_epoch=-1) == (3, 5)


def test_a_follower_refuses_leader_work(manager: LogManager) -> None:
    part, _ = make_partition(manager, leader=2)
    assert part.leader_error() == ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(NotLeaderOrFollower):
        append(part)
    with pytest.raises(NotLeaderOrFollower):
        part.delete_records_on_leader(0)
    result = part.read_records(
        0, 1000, current_leader_epoch=-1, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True,
    )  # fmt: skip
    assert result.error == ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize(
    ("current", "expected"),
    [(-1, ErrorCode.NONE), (3, ErrorCode.NONE), (2, ErrorCode.FENCED_LEADER_EPOCH),
     (4, ErrorCode.UNKNOWN_LEADER_EPOCH)],
)  # fmt: skip
def test_the_epoch_fence(manager: LogManager, current: int, expected: ErrorCode) -> None:
    part, _ = make_partition(manager)
    append(part)
    result = part.read_records(
        0, 1000, current_leader_epoch=current, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True,
    )  # fmt: skip
    assert result.error == expected
    raised = {
        ErrorCode.FENCED_LEADER_EPOCH: FencedLeaderEpoch,
        ErrorCode.UNKNOWN_LEADER_EPOCH: UnknownLeaderEpoch,
    }.get(expected)
    if raised is None:
        part.fetch_offset_for_timestamp(-1, isolation=FetchIsolation.HIGH_WATERMARK,
                                        current_leader_epoch=current)  # fmt: skip
    else:
        with pytest.raises(raised):
            part.fetch_offset_for_timestamp(-1, isolation=FetchIsolation.HIGH_WATERMARK,
                                            current_leader_epoch=current)  # fmt: skip


def test_reads_stop_at_the_isolation_bound(manager: LogManager) -> None:
    part, _ = make_partition(manager)
    append(part, 2)
    append(part, 2)
    part.log.high_watermark_follows_log_end = False
    part.log.update_high_watermark(2)
    consumer = part.read_records(
        0, 1 << 20, current_leader_epoch=-1, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True,
    )  # fmt: skip
    follower = part.read_records(
        0, 1 << 20, current_leader_epoch=-1, isolation=FetchIsolation.LOG_END,
        min_one_batch=True,
    )  # fmt: skip
    assert consumer.high_watermark == 2
    assert consumer.region is not None and follower.region is not None
    assert [o for o, _, _ in record_values(consumer.region.read())] == [0, 1]
    assert [o for o, _, _ in record_values(follower.region.read())] == [0, 1, 2, 3]
    out_of_range = part.read_records(
        9, 100, current_leader_epoch=-1, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True,
    )  # fmt: skip
    assert out_of_range.error == ErrorCode.OFFSET_OUT_OF_RANGE
    # a partition the fetch's byte budget no longer reaches reads nothing, but an offset
    # outside the log is still answered (Kafka's read checks it before the size)
    for offset, error in ((9, ErrorCode.OFFSET_OUT_OF_RANGE), (1, ErrorCode.NONE)):
        spent = part.read_records(
            offset, 0, current_leader_epoch=-1, isolation=FetchIsolation.HIGH_WATERMARK,
            min_one_batch=False,
        )  # fmt: skip
        assert (spent.error, spent.region) == (error, None)


@pytest.mark.parametrize(
    ("offset", "last_epoch", "expected"),
    [(3, 3, None), (5, 3, None), (6, 3, DivergingEpoch(3, 5)), (2, 2, DivergingEpoch(2, 0)),
     (2, 4, "out of range"), (0, 3, None)],
)  # fmt: skip
def test_a_consumer_fetch_naming_its_last_fetched_epoch(
    manager: LogManager, offset: int, last_epoch: int, expected: object
) -> None:
    """Kafka's ``Partition.readRecords`` checks a fetch's last fetched epoch (v12+) for a
    consumer as for a follower: this log (epoch 3 from offset 0, end 5) answers where the
    sender's diverged; an epoch it cannot place is out of range."""
    part, _ = make_partition(manager)
    append(part, 3)
    append(part, 2)
    result = part.read_records(
        offset, 1 << 20, current_leader_epoch=3, isolation=FetchIsolation.HIGH_WATERMARK,
        min_one_batch=True, last_fetched_epoch=last_epoch,
    )  # fmt: skip
    if expected == "out of range":
        assert result.error == ErrorCode.OFFSET_OUT_OF_RANGE and result.high_watermark == -1
    elif expected is None:
        assert result.error == ErrorCode.NONE and result.diverging_epoch is None
    else:
        assert result.error == ErrorCode.NONE and result.diverging_epoch == expected
        assert result.region is None and result.high_watermark == 5


def test_a_follower_below_the_log_start_learns_it_despite_its_last_fetched_epoch(
    manager: LogManager,
) -> None:
    """The replica fetcher starts over at the log start the out-of-range answer carries: the
    divergence check must not drop it (Kafka's follower asks ListOffsets instead)."""
    part, _ = make_partition(manager, replicas=(1, 2))
    for _ in range(3):
        append(part, 2)
    part.delete_records_on_leader(4)
    result = part.read_for_follower(
        2, 1, 1 << 20, current_leader_epoch=3, last_fetched_epoch=3,
        follower_log_start_offset=0, min_one_batch=True,
    )  # fmt: skip
    assert (result.error, result.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, 4)


def test_delete_records_bounds(manager: LogManager) -> None:
    part, _ = make_partition(manager)
    append(part, 4)
    with pytest.raises(OffsetOutOfRange):
        part.delete_records_on_leader(5)
    with pytest.raises(OffsetOutOfRange):
        part.delete_records_on_leader(-7)
    assert part.delete_records_on_leader(2) == 2
    assert part.delete_records_on_leader(-1) == 4  # -1: the high watermark


def test_invalid_batches_are_refused_and_nothing_is_appended(manager: LogManager) -> None:
    part, _ = make_partition(manager)
    batch = make_batch(2, timestamp=NOW)
    batch[-1] ^= 0xFF  # the CRC no longer matches
    with pytest.raises(RecordError) as e:
        part.append_records_to_leader(memoryview(batch), api_version=9, now_ms=NOW)
    assert e.value.error_code == ErrorCode.CORRUPT_MESSAGE
    assert part.log_end_offset == 0 and part.bytes_visible == 0


async def test_a_delayed_fetch_wakes_on_append_and_on_leadership_change(
    manager: LogManager,
) -> None:
    part, purgatory = make_partition(manager)
    loop = asyncio.get_running_loop()
    op = DelayedFetch(loop, timeout_ms=60_000, needed=1, partitions=[part])
    assert not purgatory.try_complete_else_watch(op, [part.key])
    await loop.run_in_executor(None, append, part)  # an append on another thread
    await asyncio.wait_for(op.future, 5)
    assert not op.expired

    op = DelayedFetch(loop, timeout_ms=60_000, needed=1, partitions=[part])
    assert not purgatory.try_complete_else_watch(op, [part.key])
    part.update_state(PartitionState(0, 2, 4, (1, 2), (2,)))  # another broker leads now
    await asyncio.wait_for(op.future, 5)
    assert not part.is_leader and part.leader_epoch == 4
