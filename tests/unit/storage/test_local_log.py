"""LocalLog alone (segments, roll, truncation, deletion scheduling, reads), and the partition
log's follower appends over it: a follower that takes the leader's batches as they are, is
truncated to a divergence point and catches up again holds the leader's bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.config import LogConfig
from storage.local_log import LocalLog
from storage.log import PartitionLog
from storage.segment import LogSegment
from storage.segments import LogSegments
from tests.unit.storage.test_log import SMALL, open_log
from tests.unit.storage.util import FakeClock, make_batch, record_values


def local_log(tmp_path: Path, config: LogConfig = SMALL) -> LocalLog:
    directory = tmp_path / "t-0"
    directory.mkdir()
    first = LogSegment.create(directory, 0, config, created_ms=0)
    return LocalLog(
        directory,
        "t",
        0,
        config,
        segments=LogSegments([first]),
        log_end_offset=0,
        recovery_point=0,
        now_ms=0,
    )


def batch_at(base: int, count: int = 3) -> bytearray:
    data = make_batch(count)
    data[0:8] = base.to_bytes(8, "big")
    return data


def test_append_roll_read_and_truncate(tmp_path: Path) -> None:
    local = local_log(tmp_path)
    local.append(local.active_segment, batch_at(0), 2, 1002, 2, 2)
    assert local.log_end_offset == 3
    rolled = local.roll(10, None)
    assert rolled.base_offset == 3 and len(local.segments) == 2
    assert local.roll(11, None) is rolled  # an empty active segment at the end is kept
    local.append(rolled, batch_at(3), 5, 1002, 5, 5)
    region = LocalLog.read_from(local.segments, 4, 10**6, upper=6, min_one_batch=True)
    assert region is not None and [o for o, _, _ in record_values(region.read())] == [3, 4, 5]
    assert local.truncate_to(4, 20) == 3  # the batch holding 4 goes whole
    assert local.log_end_offset == 3 and local.recovery_point == 0
    assert LocalLog.read_from(local.segments, 3, 10**6, upper=3, min_one_batch=True) is None


def test_removed_segments_are_renamed_then_deleted_after_the_delay(tmp_path: Path) -> None:
    local = local_log(tmp_path, LogConfig(segment_bytes=1000, file_delete_delay_ms=100))
    local.append(local.active_segment, batch_at(0), 2, 1002, 2, 2)
    first = local.active_segment
    local.roll(0, None)
    local.remove_segments([first], 50)
    assert [s.base_offset for s in local.segments] == [3]
    assert list((tmp_path / "t-0").glob("*.deleted"))
    assert local.take_due_deletes(100, force=False) == []
    due = local.take_due_deletes(150, force=False)
    assert due == [first] and local.pending_deletes == []
    for segment in due:
        segment.delete_files()
    assert not list((tmp_path / "t-0").glob("*.deleted"))


def test_truncate_fully_starts_an_empty_log(tmp_path: Path) -> None:
    local = local_log(tmp_path)
    local.append(local.active_segment, batch_at(0), 2, 1002, 2, 2)
    local.truncate_fully_and_start_at(40, 5)
    assert local.log_end_offset == local.recovery_point == 40
    assert [s.base_offset for s in local.segments] == [40]


def leader_batches(leader: PartitionLog) -> bytes:
    return leader.read_batches(leader.log_start_offset)


def test_follower_appends_keep_offsets_epochs_and_producers(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    leader.append(make_batch(3), leader_epoch=1)
    leader.append(make_batch(2, producer_id=7, producer_epoch=0, base_sequence=0), leader_epoch=1)
    leader.append(make_batch(4), leader_epoch=3)
    follower.append_as_follower(leader_batches(leader))
    assert follower.log_end_offset == leader.log_end_offset == 9
    assert leader_batches(follower) == leader_batches(leader)
    assert follower.end_offset_for_epoch(1) == leader.end_offset_for_epoch(1) == (1, 5)
    assert follower.end_offset_for_epoch(3) == (3, 9)
    with pytest.raises(ValueError):  # the same offsets again
        follower.append_as_follower(leader.read_batches(0))


def test_a_truncated_follower_converges_on_the_leaders_bytes(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader", clock=FakeClock())
    follower = open_log(tmp_path / "follower", clock=FakeClock())
    for i in range(6):
        leader.append(make_batch(2, timestamp=1000 + i), leader_epoch=0)
    follower.append_as_follower(leader_batches(leader))
    # the follower had records of epoch 0 the new leader never got: truncate at the divergence
    follower.append(make_batch(2, timestamp=5000), leader_epoch=0)
    leader.append(make_batch(3, timestamp=6000), leader_epoch=2)
    epoch, end = leader.end_offset_for_epoch(0)
    assert (epoch, end) == (0, 12)
    follower.truncate_to(end)
    follower.append_as_follower(leader.read_batches(end))
    assert leader_batches(follower) == leader_batches(leader)
    assert follower.end_offset_for_epoch(2) == leader.end_offset_for_epoch(2)
