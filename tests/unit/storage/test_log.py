import random
import threading

import pytest

from protocol.records import batch as rb
from storage.config import LogConfig
from storage.epoch import LeaderEpochFileCache
from storage.errors import OffsetOutOfRange, RecordBatchTooLarge, RecordTooLarge
from storage.loader import load_log
from storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    PartitionLog,
)
from tests.unit.storage.util import FakeClock, make_batch, parse_aiokafka, parse_kafka_python

SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=100, segment_index_bytes=4096)


def open_log(tmp_path, config=SMALL, clock=None) -> PartitionLog:
    return load_log(tmp_path / "t-0", config, clock=clock or FakeClock(), had_clean_shutdown=True)


def fill(log: PartitionLog, batches: int, count: int = 3, *, timestamp: int = 1000, step: int = 10):
    infos = []
    for i in range(batches):
        infos.append(log.append(make_batch(count, timestamp=timestamp + step * i), leader_epoch=0))
    return infos


def all_offsets(log: PartitionLog, start: int = 0) -> list[int]:
    offsets = []
    offset = start
    while offset < log.log_end_offset:
        region = log.read(offset, 10**6)
        if region is None:
            break
        parsed = parse_kafka_python(region.read())
        assert parse_aiokafka(region.read()) == parsed
        for _, record_offsets, _ in parsed:
            offsets.extend(o for o in record_offsets if o >= offset)
        offset = parsed[-1][1][-1] + 1
    return offsets


def test_append_assigns_offsets_in_place(tmp_path):
    log = open_log(tmp_path)
    data = make_batch(3) + make_batch(2)
    info = log.append(data, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 4, 5)
    headers = rb.validate_batches(data)  # rewritten in place, CRCs still valid
    assert [h.base_offset for h in headers] == [0, 3]
    assert all(h.partition_leader_epoch == 7 for h in headers)
    info = log.append(make_batch(1, timestamp=5000), leader_epoch=7)
    assert (
        info.first_offset == 5 and info.max_timestamp == 5000 and info.offset_of_max_timestamp == 5
    )
    assert log.log_end_offset == 6 == log.high_watermark
    assert log.leader_epoch_cache.entries == [(7, 0)]
    log.append(make_batch(1), leader_epoch=9)
    assert log.leader_epoch_cache.entries == [(7, 0), (9, 6)]


def test_one_batch_fast_path_matches_the_general_path(tmp_path):
    """append() takes a shortcut for one batch; it must answer, write and call the producer-state
    hook exactly as the general path (_append_batches) does."""
    logs = [open_log(tmp_path / "fast"), open_log(tmp_path / "general")]
    calls: list[list] = [[], []]
    for log, seen in zip(logs, calls, strict=True):

        class Hook:
            def before_append(self, log, batches, buf, validate=True, verification=None, seen=seen):
                seen.append(("before", [(p, tuple(h)) for p, h in batches]))

            def rolled(self, log, base_offset):
                pass

            def segments_deleted(self, log, base_offsets):
                pass

            def after_append(self, log, info, batches, seen=seen):
                seen.append(("after", info, [tuple(h) for h in batches]))

        log.producer_state = Hook()
    cases = [
        make_batch(4, timestamp=2000, value_size=150),
        make_batch(1, timestamp=-1),
        make_batch(3, timestamp=1500, producer_id=42, producer_epoch=0, base_sequence=0),
        make_batch(2, timestamp=1600, compression=1),
    ] * 4  # enough bytes for several segments (and index entries) with SMALL
    for i, batch in enumerate(cases):
        fast = logs[0].append(bytearray(batch), leader_epoch=i // 5, now_ms=i)
        total = len(batch)
        general = logs[1]._append_batches(bytearray(batch), total, i // 5, i, True, SMALL)
        assert fast == general
    # "after" for every append, "before" only for the four batches with a producer id
    assert calls[0] == calls[1] and len(calls[0]) == len(cases) + 4
    for a, b in zip(logs[0].segments, logs[1].segments, strict=True):
        assert a.base_offset == b.base_offset
        assert a.log.pread(a.size, 0) == b.log.pread(b.size, 0)
        assert a.offset_index.entries == b.offset_index.entries
        assert [a.time_index.entry(i) for i in range(a.time_index.entries)] == [
            b.time_index.entry(i) for i in range(b.time_index.entries)
        ]


def test_reads_parse_with_kafka_python_and_aiokafka(tmp_path):
    log = open_log(tmp_path)
    fill(log, 40)
    assert log.num_segments > 3
    assert all_offsets(log) == list(range(120))
    for offset in range(120):
        region = log.read(offset, 1)
        batches = parse_kafka_python(region.read())
        assert len(batches) == 1 and offset in batches[0][1]
    assert log.read(120, 100) is None
    with pytest.raises(OffsetOutOfRange) as e:
        log.read(121, 100)
    assert (e.value.log_start_offset, e.value.log_end_offset) == (0, 120)
    region = log.read(0, 10**6, max_offset=5)
    assert [b[0] for b in parse_kafka_python(region.read())] == [0, 3]
    assert log.read(5, 10**6, max_offset=5) is None
    assert log.read(0, 50, min_one_batch=False) is None


def test_regions_are_maximal_runs_of_whole_batches(tmp_path):
    log = open_log(tmp_path, LogConfig(segment_bytes=100_000, index_interval_bytes=200))
    bounds = []  # (base offset, last offset, size) of every batch
    for i in range(60):
        info = log.append(make_batch(1 + i % 4, value_size=1 + (i * 37) % 300))
        bounds.append((info.first_offset, info.last_offset, info.valid_bytes))
    rng = random.Random(7)
    for _ in range(500):
        offset = rng.randrange(log.log_end_offset)
        max_bytes = rng.randrange(1, 3000)
        region = log.read(offset, max_bytes)
        batches = parse_kafka_python(region.read())
        assert offset in batches[0][1]
        first = next(i for i, b in enumerate(bounds) if b[0] <= offset <= b[1])
        taken = len(batches)
        assert [b[0] for b in batches] == [b[0] for b in bounds[first : first + taken]]
        assert region.length == sum(b[2] for b in bounds[first : first + taken])
        if taken > 1:
            assert region.length <= max_bytes
        if first + taken < len(bounds):  # the next batch would not have fit
            assert max(region.length, bounds[first][2]) + bounds[first + taken][2] > max_bytes


def test_small_regions_of_rolled_segments_reuse_the_bytes_the_header_scan_read(tmp_path):
    """A small region of a segment taking no appends is in memory (from the scan's read when it
    lies whole inside one, else a pread of its own); the active segment's are sent from the
    file. Either way the bytes are the file's."""
    import os

    from storage.file_records import SMALL_REGION_BYTES

    log = open_log(tmp_path, LogConfig(segment_bytes=60_000, index_interval_bytes=4096))
    for i in range(80):
        log.append(make_batch(1 + i % 3, value_size=200 + (i * 997) % 9000))
    assert log.num_segments > 3
    active = log.active_segment.log
    rng = random.Random(11)
    in_memory = from_file = 0
    for _ in range(300):
        offset = rng.randrange(log.log_end_offset)
        region = log.read(offset, rng.choice([1, 5000, 20_000, 10**6]))
        fd = os.open(region.records.path, os.O_RDONLY)
        try:
            assert region.read() == os.pread(fd, region.length, region.position)
        finally:
            os.close(fd)
        if region.records is active or region.length > SMALL_REGION_BYTES:
            assert region.data is None and region.handle is not None
            from_file += 1
        else:
            assert region.data is not None and region.handle is None
            in_memory += 1
    assert in_memory and from_file


def test_roll_by_segment_ms_and_full_index(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, LogConfig(segment_ms=1000, segment_index_bytes=8 * 2 + 12), clock)
    log.append(make_batch(1, timestamp=0))
    log.append(make_batch(1, timestamp=999))
    assert log.num_segments == 1
    log.append(make_batch(1, timestamp=1001))
    assert log.num_segments == 2 and log.active_segment.base_offset == 2
    # tiny indexes: a roll once the time index has no free slot
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=24)
    log2 = open_log(tmp_path / "x", config)
    for i in range(6):
        log2.append(make_batch(1, timestamp=i))
    assert log2.num_segments >= 3
    assert all_offsets(log2) == list(range(6))


def test_limits(tmp_path):
    log = open_log(tmp_path, LogConfig(segment_bytes=500, max_message_bytes=200))
    with pytest.raises(RecordTooLarge):
        log.append(make_batch(1, value_size=300))
    with pytest.raises(RecordBatchTooLarge):
        log.append(b"".join(make_batch(1, value_size=100) for _ in range(5)))
    assert log.log_end_offset == 0


def test_log_append_time(tmp_path):
    clock = FakeClock(123456)
    log = open_log(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"), clock)
    info = log.append(make_batch(2, timestamp=5))
    assert info.log_append_time == 123456 == info.max_timestamp
    data = log.read_batches(0)
    assert rb.validate_batches(data)[0].timestamp_type == 1
    assert parse_kafka_python(data)[0][2] == [123456, 123456]


def test_flush_messages_advances_recovery_point(tmp_path):
    log = open_log(tmp_path, LogConfig(flush_messages=1))
    fill(log, 3)
    assert log.recovery_point == 9
    log2 = open_log(tmp_path / "y")
    fill(log2, 3)
    assert log2.recovery_point == 0
    log2.flush()
    assert log2.recovery_point == 9


def test_offsets_by_timestamp(tmp_path):
    log = open_log(tmp_path)
    timestamps = [[5000, 1000, 3000], [2000, 2500, 2400], [7000, 6000, 6500], [100, 200, 300]]
    for ts in timestamps:
        log.append(make_batch(3, timestamps=ts), leader_epoch=2)
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (0, -1, 2)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (12, -1, 2)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP, max_offset=4).offset == 4
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (6, 7000, 2)
    assert log.fetch_offset_by_timestamp(0)[:2] == (0, 5000)
    assert log.fetch_offset_by_timestamp(5001)[:2] == (6, 7000)
    assert log.fetch_offset_by_timestamp(6400)[:2] == (6, 7000)
    assert log.fetch_offset_by_timestamp(2450)[:2] == (0, 5000)
    assert log.fetch_offset_by_timestamp(7001) is None
    assert log.fetch_offset_by_timestamp(6400, max_offset=6) is None


def test_offsets_by_timestamp_in_compressed_batches(tmp_path):
    log = open_log(tmp_path)
    for codec in (1, 2, 3, 4):
        data = make_batch(4, timestamp=1000 * codec, compression=codec, value_size=100)
        log.append(data)
        assert rb.read_header(data).compression == codec
    assert log.fetch_offset_by_timestamp(2002)[:2] == (6, 2002)
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP)[:2] == (15, 4003)


def test_retention_by_time_size_and_start_offset(tmp_path):
    clock = FakeClock(1_000_000)
    config = LogConfig(segment_bytes=400, retention_ms=10_000, file_delete_delay_ms=0)
    log = open_log(tmp_path, config, clock)
    for i in range(12):
        log.append(make_batch(3, timestamp=1_000_000 + i * 1000))
    segments = log.num_segments
    assert segments >= 4
    clock.advance(10_000 + 2500)  # the first batches are now older than retention.ms
    deleted = log.delete_old_segments()
    assert 0 < deleted < segments
    assert log.log_start_offset == log.segments.first.base_offset > 0
    assert all_offsets(log, log.log_start_offset) == list(range(log.log_start_offset, 36))
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    # by size
    log.config = LogConfig(segment_bytes=400, retention_bytes=500, retention_ms=-1)
    log.delete_old_segments()
    assert log.size_in_bytes - log.segments.active.size <= 500
    # everything expired: the active segment rolls first, the log keeps its end offset
    log.config = LogConfig(segment_bytes=400, retention_ms=1)
    clock.advance(10**7)
    log.delete_old_segments()
    assert log.num_segments == 1 and log.log_start_offset == log.log_end_offset == 36
    assert log.read(36, 100) is None
    log.append(make_batch(1))
    assert log.log_end_offset == 37


def test_region_survives_deletion_of_its_segment(tmp_path):
    clock = FakeClock()
    config = LogConfig(segment_bytes=400, file_delete_delay_ms=0)
    log = open_log(tmp_path, config, clock)
    fill(log, 10)
    region = log.read(0, 10**6)
    expected = region.read()
    log.delete_records_before(log.segments[1].base_offset)
    assert log.delete_pending_files(force=True) >= 1
    assert not region.records.path.exists()
    assert region.read() == expected  # the descriptor is still open


def test_delete_records_before(tmp_path):
    log = open_log(tmp_path)
    fill(log, 20)
    assert log.delete_records_before(31) == 31
    assert log.log_start_offset == 31
    region = log.read(31, 1)
    assert 31 in parse_kafka_python(region.read())[0][1]  # the batch holding 31 starts at 30
    with pytest.raises(OffsetOutOfRange):
        log.read(30, 1)
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 31
    assert log.fetch_offset_by_timestamp(0)[:2] == (31, 1101)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(61)
    assert log.segments.first.base_offset <= 31


def test_truncate_to(tmp_path):
    log = open_log(tmp_path)
    fill(log, 20)
    log.append(make_batch(1), leader_epoch=3)
    assert log.truncate_to(32)  # mid-batch 30..32: the batch goes, the end offset is 30
    assert log.log_end_offset == 30 and log.high_watermark == 30
    assert all_offsets(log) == list(range(30))
    assert log.leader_epoch_cache.entries == [(0, 0)]
    info = log.append(make_batch(2))
    assert info.first_offset == 30
    assert not log.truncate_to(100)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and log.num_segments == 1
    log.append(make_batch(1))
    assert all_offsets(log) == [0]


def test_append_without_assigning_offsets(tmp_path):
    log = open_log(tmp_path)
    data = make_batch(2)
    rb.set_base_offset(data, 0, 100)
    info = log.append(data, assign_offsets=False)
    assert (info.first_offset, info.last_offset) == (100, 101)
    assert log.log_end_offset == 102
    with pytest.raises(ValueError):
        log.append(make_batch(1), assign_offsets=False)  # offset 0 is below the end


def test_producer_state_hook(tmp_path):
    log = open_log(tmp_path)
    seen = []

    class Hook:
        def before_append(self, log, batches, buf, validate=True, verification=None):
            seen.append([(h.producer_id, h.base_sequence) for _, h in batches])
            return None

        def rolled(self, log, base_offset):
            pass

        def segments_deleted(self, log, base_offsets):
            pass

        def after_append(self, log, info, batches):
            seen.append([(h.base_offset, h.last_sequence) for h in batches])

    log.producer_state = Hook()
    log.append(make_batch(3, producer_id=42, producer_epoch=0, base_sequence=5))
    assert seen == [[(42, 5)], [(0, 7)]]


@pytest.mark.parametrize("expired", [True, False], ids=["all-expired", "by-size"])
def test_concurrent_appends_reads_and_retention(tmp_path, expired):
    clock = FakeClock()
    timestamp = 1000 if expired else clock.now_ms  # expired: retention.ms deletes everything
    config = LogConfig(segment_bytes=2000, index_interval_bytes=100, retention_bytes=20_000)
    log = open_log(tmp_path, config, clock)
    errors = []
    stop = threading.Event()

    def appender():
        try:
            for _ in range(400):
                log.append(make_batch(2, timestamp=timestamp))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def reader():
        try:
            while not stop.is_set():
                end = log.log_end_offset
                start = log.log_start_offset
                if end <= start:
                    continue
                offset = random.randrange(start, end)
                try:
                    region = log.read(offset, random.randrange(1, 5000))
                except OffsetOutOfRange:
                    continue  # retention moved the start meanwhile
                batches = parse_kafka_python(region.read())
                assert offset in batches[0][1]
                offsets = [o for b in batches for o in b[1]]
                assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
        except Exception as e:
            errors.append(e)

    def retention():
        while not stop.is_set():
            log.delete_old_segments()
            log.delete_pending_files(force=True)

    appenders = [threading.Thread(target=appender) for _ in range(3)]
    others = [threading.Thread(target=reader) for _ in range(2)] + [
        threading.Thread(target=retention)
    ]
    for t in appenders + others:
        t.start()
    for t in appenders:
        t.join()
    stop.set()
    for t in others:
        t.join()
    assert not errors, errors
    assert log.log_end_offset == 2400
    assert all_offsets(log, log.log_start_offset) == list(range(log.log_start_offset, 2400))


def test_epoch_cache_survives_reload(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(1), leader_epoch=1)
    log.append(make_batch(1), leader_epoch=4)
    # appends assign epochs in memory; the checkpoint is written when the log is flushed,
    # before the recovery point passes them (Kafka flushes it off the append path too)
    log.flush()
    assert LeaderEpochFileCache(tmp_path / "t-0" / "leader-epoch-checkpoint").entries == [
        (1, 0),
        (4, 1),
    ]
    assert log.end_offset_for_epoch(1) == (1, 1)


@pytest.mark.parametrize("seed", range(4))
def test_epochs_not_yet_checkpointed_are_rebuilt_after_a_crash(tmp_path, seed):
    """Appends assign epochs without writing the checkpoint; a crash at any moment (the log is
    never closed; written bytes are in the page cache, as after a SIGKILL) loses no entry:
    those the recovery point passed are in the file, the others come back from batch headers."""
    rng = random.Random(seed)
    log = open_log(tmp_path)
    epoch = 0
    flushed_recovery_point = 0  # what the recovery-point checkpoint would hold
    for _ in range(rng.randrange(20, 60)):
        if rng.random() < 0.3:
            epoch += rng.randrange(1, 3)
        log.append(make_batch(rng.randrange(1, 4)), leader_epoch=epoch)
        if rng.random() < 0.2:
            log.flush(rng.randrange(log.recovery_point, log.log_end_offset + 1))
            flushed_recovery_point = log.recovery_point
    expected = log.leader_epoch_cache.entries
    reloaded = load_log(
        tmp_path / "t-0",
        SMALL,
        recovery_point=flushed_recovery_point,
        clock=FakeClock(),
        had_clean_shutdown=False,
    )
    assert reloaded.leader_epoch_cache.entries == expected
    assert reloaded.end_offset_for_epoch(0) == log.end_offset_for_epoch(0)


def test_segment_files_parse_with_real_clients_and_indexes_point_at_batches(tmp_path):
    """Acceptance: every .log file is a sequence of batches kafka-python and aiokafka read, and
    every .index entry names the last offset of the batch at its position."""
    import struct

    config = LogConfig(segment_bytes=3000, index_interval_bytes=150)
    log = open_log(tmp_path, config)
    expected = 0
    for i in range(40):
        data = make_batch(1 + i % 3, compression=i % 5, value_size=60, timestamp=1000 + i)
        if i % 7 == 0:
            data += make_batch(2, value_size=5)  # two batches in one append
        info = log.append(data, leader_epoch=1)
        expected = info.last_offset + 1
    log.close()
    directory = tmp_path / "t-0"
    offsets = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        parsed = parse_kafka_python(data)
        assert parse_aiokafka(data) == parsed
        offsets.extend(o for batch in parsed for o in batch[1])
        index = (directory / (path.stem + ".index")).read_bytes()
        base = int(path.stem)
        starts = {pos: h.last_offset for pos, h in rb.iter_batches(data)}
        for rel, position in struct.iter_unpack(">ii", index):
            assert starts[position] == base + rel
        timeindex = (directory / (path.stem + ".timeindex")).read_bytes()
        last_offsets = {h.last_offset for _, h in rb.iter_batches(data)}
        for _ts, rel in struct.iter_unpack(">qi", timeindex):
            assert base + rel in last_offsets
    assert offsets == list(range(expected))


def test_reads_do_not_take_the_log_lock(tmp_path):
    """While an append (or retention) holds the log's lock, reads and ListOffsets still answer:
    called here by the thread holding the (non-reentrant) lock, they would deadlock otherwise."""
    log = open_log(tmp_path)
    fill(log, 20)
    with log._lock:
        assert parse_kafka_python(log.read(31, 1).read())[0][1] == [30, 31, 32]
        assert log.fetch_offset_by_timestamp(1101)[:2] == (31, 1101)
        assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP).offset == 59
        assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 60, 60)


def test_follow_log_end_takes_the_appends_made_before_it(tmp_path):
    """A partition that becomes the leader of its single replica hands its high watermark to
    the log (follow_log_end): appends already made (while the flag was off, as by a produce
    racing the leadership change) become visible at once, later ones as they land."""
    log = open_log(tmp_path)
    log.high_watermark_follows_log_end = False  # a replica not (yet) leading
    fill(log, 2)
    assert log.high_watermark == 0 and log.log_end_offset == 6
    assert log.follow_log_end() == 6
    assert log.high_watermark == 6 and log.high_watermark_follows_log_end
    log.append(make_batch(2))
    assert log.high_watermark == 8
