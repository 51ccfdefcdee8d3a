import os

from protocol.records import batch as rb
from storage.config import LogConfig, LogManagerConfig
from storage.manager import LogManager
from tests.unit.storage.util import FakeClock, make_batch, parse_kafka_python, record_values

COMPACT = {
    "cleanup.policy": "compact",
    "segment.bytes": 600,
    "index.interval.bytes": 100,
    "delete.retention.ms": 1000,
    "min.cleanable.dirty.ratio": 0.01,
}


def setup(tmp_path, overrides=None, **kw):
    clock = FakeClock()
    m = LogManager([tmp_path], LogConfig(), clock, **kw)
    m.startup()
    log = m.get_or_create_log("c", 0, config_overrides={**COMPACT, **(overrides or {})})
    return m, log, clock


def put(log, pairs, **kw):
    """Appends one batch of (key, value) records."""
    keys = [k for k, _ in pairs]
    values = [v for _, v in pairs]
    return log.append(make_batch(len(pairs), keys=keys, values=values, **kw))


def contents(log):
    """(offset, key, value) of every record from the log start, across segments."""
    return list(record_values(log.read_batches(log.log_start_offset)))


def latest_by_key(records):
    latest = {}
    for offset, key, value in records:
        latest[key] = (offset, value)
    return latest


def test_keeps_the_latest_record_per_key(tmp_path):
    m, log, clock = setup(tmp_path)
    written = []
    for round_ in range(12):
        pairs = [(b"k%d" % i, b"r%d-%d" % (round_, i)) for i in range(5)]
        info = put(log, pairs)
        written.extend((info.first_offset + i, k, v) for i, (k, v) in enumerate(pairs))
    assert log.num_segments >= 3
    before_end = log.log_end_offset
    active_bytes = log.active_segment.log.pread(log.active_segment.size, 0)
    stats = m.cleaner.clean(log, clock.now_ms)
    assert stats.groups_swapped >= 1 and stats.records_removed > 0
    after = contents(log)
    assert log.log_end_offset == before_end
    # the latest value of every key is still there, at its original offset
    assert latest_by_key(after) == latest_by_key(written)
    # cleaned part: one record per key; the active segment untouched
    cleaned = [r for r in after if r[0] < log.active_segment.base_offset]
    assert len({r[1] for r in cleaned}) == len(cleaned)
    assert log.active_segment.log.pread(log.active_segment.size, 0) == active_bytes
    # every offset still reads (gaps land on the next batch)
    for offset in range(log.log_start_offset, log.log_end_offset):
        region = log.read(offset, 1)
        batch = parse_kafka_python(region.read())[0]
        assert batch[0] <= offset or offset < batch[1][0]
    assert not [n for n in os.listdir(tmp_path / "c-0") if n.endswith((".cleaned", ".swap"))]
    m.shutdown()
    assert "c 0 " in (tmp_path / "cleaner-offset-checkpoint").read_text()
    m = LogManager([tmp_path], LogConfig(), clock)
    m.startup()
    assert contents(m.get_log("c", 0)) == after
    m.shutdown()


def test_batches_keep_offsets_and_producer_fields(tmp_path):
    m, log, clock = setup(tmp_path)
    put(
        log,
        [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")],
        producer_id=7,
        producer_epoch=2,
        base_sequence=0,
    )
    put(
        log,
        [(b"a", b"2"), (b"b", b"2"), (b"c", b"2")],
        producer_id=7,
        producer_epoch=2,
        base_sequence=3,
    )
    put(log, [(b"x", b"1"), (b"a", b"3")], producer_id=8, producer_epoch=0, base_sequence=0)
    put(log, [(b"y", b"1" * 100)] * 3, compression=1)  # gzip, only the last record survives
    log.roll()
    put(log, [(b"z", b"0")])
    m.cleaner.clean(log, clock.now_ms)
    data = log.read_batches(0)
    headers = {header.base_offset: header for _, header in rb.iter_batches(data)}
    # batch 0 (producer 7, all superseded by batch 3) is gone: not producer 7's last batch
    assert 0 not in headers
    # batch 3 lost "a" only; keeps base offset, last offset and sequences
    h = headers[3]
    assert (h.last_offset, h.producer_id, h.producer_epoch, h.base_sequence, h.record_count) == (
        5,
        7,
        2,
        3,
        2,
    )
    # batch 6 (producer 8) keeps both records
    assert headers[6].record_count == 2
    # the gzip batch keeps its codec and its last offset, with one record left
    assert (headers[8].compression, headers[8].last_offset, headers[8].record_count) == (1, 10, 1)
    assert record_values(data)[-2:] == [(10, b"y", b"1" * 100), (11, b"z", b"0")]
    m.shutdown()


def test_empty_batch_kept_for_a_producers_last_sequence(tmp_path):
    m, log, clock = setup(tmp_path)
    put(log, [(b"a", b"1"), (b"b", b"1")], producer_id=5, producer_epoch=1, base_sequence=10)
    put(log, [(b"a", b"2"), (b"b", b"2")])  # no producer id: supersedes everything above
    log.roll()
    put(log, [(b"z", b"0")])
    m.cleaner.clean(log, clock.now_ms)
    data = log.read_batches(0)
    headers = [h for _, h in rb.iter_batches(data)]
    empty = headers[0]
    assert (empty.base_offset, empty.last_offset, empty.record_count) == (0, 1, 0)
    assert (empty.producer_id, empty.base_sequence, empty.last_sequence) == (5, 10, 11)
    assert parse_kafka_python(data)[0] == (0, [], [])  # clients read an empty batch fine
    m.shutdown()


def test_tombstones_stay_until_the_delete_horizon(tmp_path):
    m, log, clock = setup(tmp_path)
    put(log, [(b"a", b"1"), (b"b", b"1")])
    put(log, [(b"a", None)])  # tombstone
    log.roll()
    put(log, [(b"z", b"0")])
    m.cleaner.clean(log, clock.now_ms)
    data = log.read_batches(0)
    headers = [h for _, h in rb.iter_batches(data)]
    tomb = next(h for h in headers if h.base_offset == 2)
    assert tomb.attributes & rb.DELETE_HORIZON_MASK
    assert tomb.base_timestamp == clock.now_ms + 1000  # delete.retention.ms
    assert [(o, k, v) for o, k, v in record_values(data)][:2] == [(1, b"b", b"1"), (2, b"a", None)]
    clock.advance(500)
    m.cleaner.clean(log, clock.now_ms)
    assert (2, b"a", None) in record_values(log.read_batches(0))
    clock.advance(600)
    m.cleaner.clean(log, clock.now_ms)
    assert record_values(log.read_batches(0)) == [(1, b"b", b"1"), (3, b"z", b"0")]
    m.shutdown()


def test_records_without_keys_are_removed(tmp_path):
    m, log, clock = setup(tmp_path)
    put(log, [(None, b"x"), (b"k", b"1")])
    log.roll()
    put(log, [(b"z", b"0")])
    m.cleaner.clean(log, clock.now_ms)
    assert record_values(log.read_batches(0)) == [(1, b"k", b"1"), (2, b"z", b"0")]
    m.shutdown()


def test_min_compaction_lag_and_dirty_ratio(tmp_path):
    m, log, clock = setup(
        tmp_path, {"min.compaction.lag.ms": 10_000, "min.cleanable.dirty.ratio": 0.5}
    )
    for _ in range(10):
        put(log, [(b"k", b"v")], timestamp=clock.now_ms)
        log.roll()
    assert m.clean_logs(clock.now_ms) == 0  # everything is younger than the lag
    clock.advance(20_000)
    assert m.clean_logs(clock.now_ms) == 1
    assert m.clean_logs(clock.now_ms) == 0  # nothing dirty any more
    assert len(record_values(log.read_batches(0))) == 1
    for _ in range(2):
        put(log, [(b"k", b"v2")], timestamp=clock.now_ms - 20_000)
        log.roll()
    # dirty: 2 small segments against the cleaned one, below... or above the ratio
    stats_before = m.cleaner.last_stats
    m.clean_logs(clock.now_ms)
    assert m.cleaner.last_stats is not stats_before
    m.shutdown()


def test_run_periodic_cleans_and_reads_survive(tmp_path):
    clock = FakeClock()
    m = LogManager(
        [tmp_path], LogConfig(), clock, manager_config=LogManagerConfig(cleaner_backoff_ms=1000)
    )
    m.startup()
    log = m.get_or_create_log("c", 0, config_overrides=COMPACT)
    for round_ in range(10):
        put(log, [(b"k%d" % i, b"%d" % round_) for i in range(4)])
    region = log.read(0, 10**6)
    before = region.read()
    m.run_periodic(clock.now_ms)
    assert m.cleaner.last_stats is not None and m.cleaner.last_stats.segments_cleaned > 0
    assert region.read() == before  # the old segment file is still open for the region
    clock.advance(120_000)
    m.run_periodic(clock.now_ms)
    assert not [n for n in os.listdir(tmp_path / "c-0") if n.endswith(".deleted")]
    m.shutdown()


def test_compact_and_delete(tmp_path):
    m, log, clock = setup(tmp_path, {"cleanup.policy": "compact,delete", "retention.ms": 1000})
    for round_ in range(6):
        put(log, [(b"k", b"%d" % round_)], timestamp=clock.now_ms)
        log.roll()
    m.cleaner.clean(log, clock.now_ms)
    assert len(record_values(log.read_batches(0))) == 1
    clock.advance(5000)
    log.delete_old_segments(clock.now_ms)
    assert log.log_start_offset == log.log_end_offset
    m.shutdown()


def test_group_given_up_when_retention_removes_its_segment(tmp_path, monkeypatch):
    m, log, clock = setup(tmp_path, {"segment.bytes": 300})
    for round_ in range(8):
        put(log, [(b"k%d" % (round_ % 3), b"%d" % round_)])
        log.roll()
    put(log, [(b"z", b"0")])
    original = type(m.cleaner)._clean_group
    calls = []

    def clean_group_then_retention(self, partition_log, group, *args):
        calls.append(group[0].base_offset)
        cleaned = original(self, partition_log, group, *args)
        if len(calls) == 1:  # retention runs while the first group is being cleaned
            partition_log.delete_records_before(partition_log.segments[1].base_offset)
        return cleaned

    monkeypatch.setattr(type(m.cleaner), "_clean_group", clean_group_then_retention)
    stats = m.cleaner.clean(log, clock.now_ms)
    assert stats.groups_aborted == 1
    assert m.cleaner.first_dirty_offset(("c", 0)) is None  # the next pass starts over
    assert not [n for n in os.listdir(tmp_path / "c-0") if n.endswith((".cleaned", ".swap"))]
    records = record_values(log.read_batches(log.log_start_offset))
    assert records[-1] == (8, b"z", b"0")
    assert all(o >= log.log_start_offset for o, _, _ in records)
    m.shutdown()
