"""ProducerStateManager on a real PartitionLog: de-duplication, sequence and epoch checks,
snapshots in Kafka's format, rebuild from the log after a crash."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from storage.config import LogConfig
from storage.loader import load_log
from storage.log import PartitionLog
from storage.producer_state import (
    InvalidProducerEpoch,
    OutOfOrderSequence,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
)
from tests.unit.storage.util import FakeClock, make_batch

SMALL = LogConfig(segment_bytes=600, index_interval_bytes=100, segment_index_bytes=4096)


def open_log(tmp_path, config=SMALL, clock=None, *, clean=True) -> PartitionLog:
    return load_log(
        tmp_path / "t-0", config, clock=clock or FakeClock(now_ms=5_000), had_clean_shutdown=clean
    )


def attach(plog: PartitionLog, clock=None, **kw) -> ProducerStateManager:
    return ProducerStateManager.attach(plog, clock=clock or FakeClock(now_ms=5_000), **kw)


def send(plog: PartitionLog, pid: int, epoch: int, seq: int, count: int = 2):
    return plog.append(
        make_batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq),
        leader_epoch=0,
    )


def test_retried_batch_gets_its_original_offsets_and_is_not_appended(tmp_path):
    plog = open_log(tmp_path)
    attach(plog)
    first = send(plog, 7, 0, 0)
    second = send(plog, 7, 0, 2)
    end = plog.log_end_offset
    again = send(plog, 7, 0, 0)
    assert (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset)
    assert plog.log_end_offset == end
    assert send(plog, 7, 0, 2).first_offset == second.first_offset
    assert send(plog, 7, 0, 4).first_offset == end


def test_only_the_last_five_batches_are_deduplicated(tmp_path):
    plog = open_log(tmp_path, LogConfig())
    attach(plog)
    for i in range(7):
        send(plog, 1, 0, 2 * i)
    assert send(plog, 1, 0, 4).first_offset == 4  # batch 3 of 7: still remembered
    # batch 1 of 7 is forgotten, but found in the log: a duplicate, with its offsets
    end = plog.log_end_offset
    assert send(plog, 1, 0, 0).first_offset == 0
    assert plog.log_end_offset == end
    with pytest.raises(OutOfOrderSequence):
        send(plog, 1, 0, 1)  # behind the last sequence, and no batch had these sequences


def test_sequence_gap_and_old_epoch_are_rejected(tmp_path):
    plog = open_log(tmp_path)
    attach(plog)
    send(plog, 3, 1, 0)
    with pytest.raises(OutOfOrderSequence) as gap:
        send(plog, 3, 1, 5)
    assert gap.value.error_code == 45
    with pytest.raises(InvalidProducerEpoch) as old:
        send(plog, 3, 0, 2)
    assert old.value.error_code == 47
    # a new epoch must start at 0 ...
    with pytest.raises(OutOfOrderSequence):
        send(plog, 3, 2, 2)
    send(plog, 3, 2, 0)
    # ... and the old one is fenced from then on
    with pytest.raises(InvalidProducerEpoch):
        send(plog, 3, 1, 2)
    assert plog.log_end_offset == 4


def test_unknown_producer_may_start_anywhere_and_plain_batches_pass(tmp_path):
    plog = open_log(tmp_path)
    attach(plog)
    send(plog, 9, 0, 1000)
    send(plog, 9, 0, 1002)
    plog.append(make_batch(3), leader_epoch=0)  # no producer id: never checked
    assert plog.log_end_offset == 7


def test_sequence_wraps_after_int_max(tmp_path):
    plog = open_log(tmp_path)
    attach(plog)
    send(plog, 5, 0, 2**31 - 2)  # last sequence: 2**31 - 1
    send(plog, 5, 0, 0)
    assert plog.log_end_offset == 4


def test_snapshot_format_is_kafkas(tmp_path):
    entry = ProducerStateEntry(42, 3)
    entry.add_batch(3, 9, 100, 4, 1234)
    data = encode_snapshot([entry])
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1) and crc == crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (42, 3, 9, 100, 4, 1234, -1, -1)
    (back,) = decode_snapshot(data)
    assert back.producer_epoch == 3 and back.last_seq == 9 and back.batches[-1].first_seq == 5


def test_state_survives_clean_restart_via_snapshot(tmp_path):
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    first = send(plog, 11, 0, 0)
    send(plog, 11, 0, 2)
    manager.take_snapshot()
    plog.close()
    assert list_snapshots(tmp_path / "t-0") == [4]

    plog = open_log(tmp_path, clock=clock)
    attach(plog, clock)
    with pytest.raises(OutOfOrderSequence):
        send(plog, 11, 0, 7)
    # the last batch is remembered, so its retry is de-duplicated
    assert send(plog, 11, 0, 2).first_offset == 2
    assert first.first_offset == 0


def test_an_empty_log_gets_no_snapshot(tmp_path):
    """As Kafka's takeSnapshot (the map must end past the log start): a snapshot at the log
    start would be deleted at the next load, so a clean shutdown of an empty partition writes
    none, and a non-empty one still gets one at its end."""
    plog = open_log(tmp_path)
    manager = attach(plog)
    assert manager.take_snapshot() is None
    assert list_snapshots(tmp_path / "t-0") == []
    send(plog, 11, 0, 0)
    assert manager.take_snapshot() is not None
    assert list_snapshots(tmp_path / "t-0") == [2]


def test_after_a_restart_a_retry_older_than_the_snapshots_batch_is_a_duplicate(tmp_path):
    """A snapshot keeps a producer's last batch only (Kafka's format), so after a restart the
    retry of an earlier batch is not among the remembered ones: it is found in the log and
    answered with its offsets (Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER there, fatal to
    librdkafka's idempotent producer, as seen in a rolling restart)."""
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, LogConfig(), clock=clock)
    manager = attach(plog, clock)
    sent = [send(plog, 12, 0, 3 * i, count=3) for i in range(6)]
    send(plog, 99, 0, 0)  # another producer's batch in between
    last = send(plog, 12, 0, 18, count=2)
    manager.take_snapshot()
    plog.close()

    plog = open_log(tmp_path, LogConfig(), clock=clock)
    attach(plog, clock)
    end = plog.log_end_offset
    for i in (4, 0):
        again = send(plog, 12, 0, 3 * i, count=3)
        assert (again.first_offset, again.last_offset) == (
            sent[i].first_offset,
            sent[i].last_offset,
        )
    assert send(plog, 12, 0, 18).first_offset == last.first_offset
    assert plog.log_end_offset == end
    with pytest.raises(OutOfOrderSequence):
        send(plog, 12, 0, 4, count=3)  # sequences no batch had
    with pytest.raises(OutOfOrderSequence):
        send(plog, 12, 0, 25)  # a gap after the last
    assert send(plog, 12, 0, 20).first_offset == end


def test_appends_without_a_producer_id_advance_the_map_and_rolls_snapshot(tmp_path):
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    send(plog, 31, 0, 0)
    for _ in range(30):  # plain batches across several rolls
        plog.append(make_batch(2), leader_epoch=0)
    assert manager.map_end_offset == plog.log_end_offset == 62
    snapshots = list_snapshots(tmp_path / "t-0")
    bases = [s.base_offset for s in plog.segments]
    # one snapshot per roll, named after the new segment's base offset (Kafka's names)
    assert len(bases) > 2 and snapshots == bases[1:]
    assert manager.last_entry(31).last_seq == 1
    # a snapshot taken after plain appends restores the producer at the later end offset
    manager.take_snapshot()
    plog.close()
    plog = open_log(tmp_path, clock=clock)
    reloaded = attach(plog, clock)
    assert reloaded.map_end_offset == 62 and reloaded.last_entry(31).last_seq == 1
    assert send(plog, 31, 0, 0).first_offset == 0  # still de-duplicated


def test_state_is_rebuilt_from_the_log_after_a_crash(tmp_path):
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    attach(plog, clock)
    for i in range(40):  # several segments: snapshots at the rolls
        send(plog, 21, 0, 2 * i)
    assert plog.num_segments > 1 and list_snapshots(tmp_path / "t-0")
    plog.flush()
    # no clean shutdown: the state after the last snapshot comes from the log itself
    plog = open_log(tmp_path, clock=clock, clean=False)
    manager = attach(plog, clock)
    assert manager.last_entry(21).last_seq == 79
    assert send(plog, 21, 0, 78).first_offset == 78  # the last batch, de-duplicated
    send(plog, 21, 0, 80)


def test_snapshot_beyond_the_log_end_is_dropped(tmp_path):
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    send(plog, 1, 0, 0)
    send(plog, 1, 0, 2)
    manager.take_snapshot()
    plog.truncate_to(2)
    plog.close()
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    # the snapshot beyond the log end is gone; loading replayed a batch and snapshotted the
    # new log end (Kafka's rebuildProducerState)
    assert list_snapshots(tmp_path / "t-0") == [2]
    assert manager.last_entry(1).last_seq == 1


def test_corrupt_snapshot_is_ignored(tmp_path):
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    send(plog, 1, 0, 0)
    path = manager.take_snapshot()
    assert path is not None
    path.write_bytes(path.read_bytes()[:-3])
    plog.close()
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    assert manager.last_entry(1).last_seq == 1  # replayed from the log instead


def test_idle_producers_expire(tmp_path):
    clock = FakeClock(now_ms=10_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock, producer_id_expiration_ms=1000)
    plog.append(make_batch(1, timestamp=10_000, producer_id=1, producer_epoch=0, base_sequence=0))
    assert manager.remove_expired_producers(10_500) == 0
    assert manager.remove_expired_producers(11_000) == 1
    # forgotten: any sequence is accepted again
    send(plog, 1, 0, 50)


def test_snapshots_are_kept_and_deleted_as_kafka_keeps_them(tmp_path):
    """One snapshot per segment base offset (taken at the roll) plus the clean-shutdown one;
    retention deletes a segment's snapshot with it; loading removes stray snapshots but the
    newest one above every segment (ProducerStateManager.removeStraySnapshots)."""
    clock = FakeClock(now_ms=5_000)
    plog = open_log(tmp_path, clock=clock)
    manager = attach(plog, clock)
    for i in range(40):
        send(plog, 21, 0, 2 * i)
    plog.update_high_watermark(plog.log_end_offset)
    bases = [s.base_offset for s in plog.segments]
    assert list_snapshots(tmp_path / "t-0") == bases[1:]
    # retention: the first segments go, and their snapshots with them
    plog.delete_records_before(bases[3])
    kept = [s.base_offset for s in plog.segments]
    assert kept[0] == bases[3]
    assert list_snapshots(tmp_path / "t-0") == [b for b in bases[1:] if b >= bases[3]]
    # a clean shutdown snapshots the log end; stray files are removed on the next load
    manager.take_snapshot()
    (tmp_path / "t-0" / "00000000000000000001.snapshot").write_bytes(b"stray")
    end = plog.log_end_offset
    plog.close()
    plog = open_log(tmp_path, clock=clock)
    attach(plog, clock)
    snapshots = list_snapshots(tmp_path / "t-0")
    assert 1 not in snapshots and end in snapshots
    assert all(s in kept or s == end for s in snapshots)
