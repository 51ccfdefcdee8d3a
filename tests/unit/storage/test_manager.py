import os
import uuid

import pytest

from storage import files
from storage.checkpoint import read_offsets_checkpoint, read_partition_metadata
from storage.config import LogConfig, LogManagerConfig
from storage.errors import InconsistentBrokerMetadata, InconsistentTopicId, LogDirInUse
from storage.manager import LogManager
from tests.unit.storage.util import FakeClock, make_batch, parse_kafka_python

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def manager(dirs, clock=None, **kw) -> LogManager:
    m = LogManager([str(d) for d in dirs], CONFIG, clock or FakeClock(), **kw)
    m.startup()
    return m


def test_create_append_shutdown_restart(tmp_path):
    topic_id = uuid.uuid4()
    m = manager([tmp_path], broker_id=1, cluster_id="c1")
    log = m.get_or_create_log("orders", 0, topic_id=topic_id)
    assert m.get_or_create_log("orders", 0) is log
    for _ in range(20):
        log.append(make_batch(3), leader_epoch=0)
    log.delete_records_before(4)
    m.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert read_offsets_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {
        ("orders", 0): 60
    }
    assert read_offsets_checkpoint(tmp_path / "log-start-offset-checkpoint") == {("orders", 0): 4}
    assert read_offsets_checkpoint(tmp_path / "replication-offset-checkpoint") == {
        ("orders", 0): 60
    }
    assert read_partition_metadata(tmp_path / "orders-0" / "partition.metadata") == topic_id
    assert "broker.id=1" in (tmp_path / "meta.properties").read_text()
    # every index file is trimmed to its entries after a clean shutdown
    for name in os.listdir(tmp_path / "orders-0"):
        if name.endswith(".index"):
            assert (tmp_path / "orders-0" / name).stat().st_size < CONFIG.segment_index_bytes

    m = manager([tmp_path], broker_id=1)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()  # a crash now is unclean
    log = m.get_log("orders", 0)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (4, 60, 60)
    assert m.recovery_reports[("orders", 0)].segments_recovered == 0
    assert log.topic_id == topic_id
    region = log.read(59, 100)
    assert parse_kafka_python(region.read())[0][1] == [57, 58, 59]
    with pytest.raises(InconsistentTopicId):
        m.get_or_create_log("orders", 0, topic_id=uuid.uuid4())
    m.shutdown()


def test_meta_properties_mismatch_and_dir_lock(tmp_path):
    m = manager([tmp_path], broker_id=1, cluster_id="c1")
    with pytest.raises(LogDirInUse):
        manager([tmp_path])
    m.shutdown()
    with pytest.raises(InconsistentBrokerMetadata):
        manager([tmp_path], broker_id=2)


def test_logs_spread_over_dirs(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    m = manager(dirs)
    for p in range(4):
        m.get_or_create_log("t", p).append(make_batch(1))
    assert sorted(len([n for n in os.listdir(d) if n.startswith("t-")]) for d in dirs) == [2, 2]
    m.shutdown()
    m = manager(dirs)
    assert sorted(pl.partition for pl in m.all_logs()) == [0, 1, 2, 3]
    m.shutdown()


def test_topic_config_overrides_and_updates(tmp_path):
    m = manager([tmp_path], topic_overrides={"big": {"segment.bytes": 10**6}})
    big = m.get_or_create_log("big", 0)
    small = m.get_or_create_log("small", 0)
    assert big.config.segment_bytes == 10**6 and small.config.segment_bytes == 1000
    m.update_config("small", {"segment.bytes": "2000", "cleanup.policy": "compact"})
    assert small.config.segment_bytes == 2000 and small.config.compact
    m.update_config("small", None)
    assert small.config == CONFIG
    created = m.get_or_create_log("new", 0, config_overrides={"retention.ms": 5})
    assert created.config.retention_ms == 5
    m.update_default_config(LogConfig(segment_bytes=3000))
    assert small.config.segment_bytes == 3000 and big.config.segment_bytes == 10**6
    m.shutdown()


def test_delete_log_keeps_regions_readable(tmp_path):
    clock = FakeClock()
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("gone", 0)
    for _ in range(5):
        log.append(make_batch(2))
    region = log.read(0, 10**6)
    expected = region.read()
    assert m.delete_log("gone", 0)
    assert m.get_log("gone", 0) is None
    deleted = [n for n in os.listdir(tmp_path) if n.endswith("-delete")]
    assert len(deleted) == 1
    assert m.delete_pending_files(clock.now_ms) == 0  # file.delete.delay.ms not over
    clock.advance(60_000)
    assert m.delete_pending_files(clock.now_ms) == 1
    assert not [n for n in os.listdir(tmp_path) if n.endswith("-delete")]
    assert region.read() == expected
    assert not m.delete_log("gone", 0)
    m.shutdown()


def test_run_periodic_retention_flush_and_checkpoints(tmp_path):
    clock = FakeClock()
    config = LogConfig(segment_bytes=400, retention_ms=60_000, flush_ms=1000)
    mc = LogManagerConfig(retention_check_interval_ms=5000, recovery_point_checkpoint_interval_ms=0)
    m = LogManager([tmp_path], config, clock, manager_config=mc)
    m.startup()
    log = m.get_or_create_log("t", 0)
    for _ in range(10):
        log.append(make_batch(3, timestamp=clock.now_ms))
    m.run_periodic()
    assert log.recovery_point < log.log_end_offset  # flush.ms not elapsed
    clock.advance(1000)
    m.run_periodic()
    assert log.recovery_point == log.log_end_offset == 30
    assert read_offsets_checkpoint(tmp_path / files.RECOVERY_POINT_CHECKPOINT) == {("t", 0): 30}
    segments = log.num_segments
    clock.advance(120_000)
    m.run_periodic()
    assert log.num_segments == 1 and segments > 1
    assert log.log_start_offset == 30
    assert log.pending_deletes > 0
    clock.advance(60_000)
    m.run_periodic()
    assert log.pending_deletes == 0
    assert not [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".deleted")]
    m.shutdown()


def test_periodic_pass_works_only_on_logs_that_need_it(tmp_path):
    """A rolled segment is flushed and a .deleted file removed on the pass after; a log with
    nothing to do is not due; the high-watermark checkpoint is rewritten only when a high
    watermark moved."""
    clock = FakeClock()
    mc = LogManagerConfig(
        retention_check_interval_ms=10**9, high_watermark_checkpoint_interval_ms=0
    )
    m = LogManager([tmp_path], LogConfig(segment_bytes=400), clock, manager_config=mc)
    m.startup()
    busy, idle = m.get_or_create_log("busy", 0), m.get_or_create_log("idle", 0)
    m.run_periodic()
    assert not busy.maintenance_due(clock.now_ms) and not idle.maintenance_due(clock.now_ms)
    hw_file = tmp_path / files.REPLICATION_OFFSET_CHECKPOINT
    written = hw_file.stat().st_ino
    m.run_periodic()
    assert hw_file.stat().st_ino == written  # nothing moved: not rewritten
    for _ in range(10):
        busy.append(make_batch(3, timestamp=clock.now_ms))
    assert busy.num_segments > 1 and busy.maintenance_due(clock.now_ms)
    assert not idle.maintenance_due(clock.now_ms)
    m.run_periodic()
    assert busy.recovery_point == busy.active_segment.base_offset  # the rolled segments
    assert read_offsets_checkpoint(hw_file)[("busy", 0)] == busy.log_end_offset
    assert hw_file.stat().st_ino != written
    # segments below a moved log start offset go to .deleted (outside the manager's retention
    # pass), and are removed on the first pass after file.delete.delay.ms
    assert busy.maybe_increment_log_start_offset(busy.active_segment.base_offset)
    busy.delete_old_segments(clock.now_ms)
    assert busy.pending_deletes > 0
    m.run_periodic()
    assert busy.pending_deletes > 0
    clock.advance(60_000)
    m.run_periodic()
    assert busy.pending_deletes == 0
    assert not [n for n in os.listdir(tmp_path / "busy-0") if n.endswith(".deleted")]
    m.shutdown()


def test_deleted_files_and_dirs_are_removed_at_startup(tmp_path):
    m = manager([tmp_path])
    log = m.get_or_create_log("t", 0)
    for _ in range(20):
        log.append(make_batch(3))
    log.delete_records_before(30)
    m.delete_log("t", 0)
    m.get_or_create_log("t", 0).append(make_batch(1))
    m.shutdown()
    m = manager([tmp_path])
    assert not [n for n in os.listdir(tmp_path) if n.endswith("-delete")]
    assert m.get_log("t", 0).log_end_offset == 1
    m.shutdown()


def test_dirs_go_offline_one_at_a_time_until_none_is_left(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    m = manager([a, b])
    m.get_or_create_log("t", 0)
    m.get_or_create_log("t", 1)
    on_a = [tp for tp in (("t", 0), ("t", 1)) if m.log_dir_of(*tp) == a.absolute()]
    assert m.mark_dir_offline(a, "disk full") == on_a
    assert m.mark_dir_offline(a, "again") == []  # offline already
    assert not m.all_offline
    m.mark_dir_offline(b, "disk full")
    assert m.all_offline
    assert m.offline_dirs == {a.absolute(): "disk full", b.absolute(): "disk full"}


def test_logs_are_created_by_many_threads_at_once(tmp_path):
    """get_or_create_log makes the files outside the manager's lock: threads create the logs
    of a large topic together, spread over the dirs as if one after another, and two threads
    asking for one partition get one log. A new log has no leader-epoch-checkpoint until its
    first epoch."""
    from concurrent.futures import ThreadPoolExecutor

    dirs = [tmp_path / "a", tmp_path / "b"]
    m = manager(dirs)
    topic_id = uuid.uuid4()
    with ThreadPoolExecutor(8) as pool:
        logs = list(
            pool.map(lambda p: m.get_or_create_log("t", p % 40, topic_id=topic_id), range(80))
        )
    assert [lg.partition for lg in logs] == [p % 40 for p in range(80)]
    assert all(logs[p] is logs[p + 40] for p in range(40))
    assert sorted(len([n for n in os.listdir(d) if n.startswith("t-")]) for d in dirs) == [20, 20]
    directory = logs[0].directory
    assert not (directory / files.LEADER_EPOCH_CHECKPOINT).exists()
    assert read_partition_metadata(directory / files.PARTITION_METADATA_FILE) == topic_id
    logs[0].assign_epoch_start_offset(3)
    assert (directory / files.LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n3 0\n"
    m.shutdown()


def test_a_log_being_created_is_waited_for_and_a_failure_is_not_kept(tmp_path, monkeypatch):
    import threading

    from storage import manager as manager_module

    m = manager([tmp_path])
    real_load = manager_module.load_log
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow_load(directory, *args, **kw):
        calls.append(directory.name)
        if directory.name == "t-0":
            entered.set()
            release.wait()
        if directory.name == "t-1" and calls.count("t-1") == 1:
            raise OSError(28, "No space left on device")
        return real_load(directory, *args, **kw)

    monkeypatch.setattr(manager_module, "load_log", slow_load)
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(m.get_or_create_log("t", 0)))
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=lambda: got.append(m.get_or_create_log("t", 0)))
    second.start()
    assert m.get_log("t", 0) is None  # not published while its files are being made
    release.set()
    first.join(10)
    second.join(10)
    assert len(got) == 2 and got[0] is got[1] and calls.count("t-0") == 1
    # a failed creation leaves nothing behind: the next call makes the log
    with pytest.raises(OSError):
        m.get_or_create_log("t", 1)
    assert m.get_log("t", 1) is None
    assert m.get_or_create_log("t", 1).partition == 1
    m.shutdown()


def test_a_log_made_while_its_dir_goes_offline_is_not_kept(tmp_path, monkeypatch):
    from storage import manager as manager_module
    from storage.errors import KafkaStorageError

    dirs = [tmp_path / "a", tmp_path / "b"]
    m = manager(dirs)
    real_load = manager_module.load_log

    def failing_dir(directory, *args, **kw):
        made = real_load(directory, *args, **kw)
        m.mark_dir_offline(directory.parent, "I/O error")
        return made

    monkeypatch.setattr(manager_module, "load_log", failing_dir)
    with pytest.raises(KafkaStorageError):
        m.get_or_create_log("t", 0)
    assert m.get_log("t", 0) is None
    monkeypatch.setattr(manager_module, "load_log", real_load)
    assert m.log_dir_of("t", 0) is None
    assert m.get_or_create_log("t", 0).directory.parent not in m.offline_dirs
    m.shutdown()
