from protocol.records import batch as rb
from storage.config import LogConfig
from storage.segment import LogSegment
from tests.unit.storage.util import make_batch, parse_aiokafka, parse_kafka_python

CONFIG = LogConfig(index_interval_bytes=100, segment_index_bytes=4096)


def fill(segment: LogSegment, batches: int, *, first_offset: int = 0, count: int = 3):
    """Appends ``batches`` batches of ``count`` records the way the log does."""
    offset = first_offset
    for i in range(batches):
        data = make_batch(count, timestamp=1000 + 10 * i)
        rb.set_base_offset(data, 0, offset)
        header = rb.read_header(data)
        segment.append(
            data,
            largest_offset=header.last_offset,
            largest_timestamp=header.max_timestamp,
            offset_of_max_timestamp=header.last_offset,
        )
        offset = header.next_offset
    return offset


def test_append_read_and_parse_with_real_clients(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    assert fill(segment, 20) == 60
    assert segment.offset_index.entries > 0
    # every index entry points at a batch start whose last offset it names
    for i in range(segment.offset_index.entries):
        offset, position = segment.offset_index.entry(i)
        header = rb.read_header(segment.log.pread(rb.HEADER_SIZE, position))
        assert header.last_offset == offset
    for offset in range(60):
        region = segment.read(offset, 1)  # min_one_batch: exactly the batch holding it
        assert region is not None
        parsed = parse_kafka_python(region.read())
        assert len(parsed) == 1 and offset in parsed[0][1]
        assert parse_aiokafka(region.read()) == parsed
    region = segment.read(7, 350)
    parsed = parse_kafka_python(region.read())
    assert parsed[0][0] == 6 and region.length <= 350
    assert sum(len(p[1]) for p in parsed) == 3 * len(parsed)
    assert segment.read(7, 10, min_one_batch=False) is None
    assert segment.read(60, 1000) is None
    region = segment.read(0, 10**6, max_offset=10)
    assert [p[0] for p in parse_kafka_python(region.read())] == [0, 3, 6, 9]
    region = segment.read(0, 10**6, max_offset=9)
    assert [p[0] for p in parse_kafka_python(region.read())] == [0, 3, 6]


def test_timestamps_and_lookup(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    fill(segment, 10)
    assert segment.max_timestamp_so_far == (1092, 29)
    info = segment.find_batch_by_timestamp(1031, 0)
    assert info is not None and info.base_offset == 9  # batch 3 has timestamps 1030..1032
    info = segment.find_batch_by_timestamp(1033, 0)
    assert info.base_offset == 12
    assert segment.find_batch_by_timestamp(5000, 0) is None
    assert segment.read_next_offset() == 30


def test_truncate_and_close_trims(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    fill(segment, 10)
    assert segment.truncate_to(13, now_ms=5) > 0  # the batch holding 13 (12..14) goes whole
    assert segment.read_next_offset() == 12
    assert segment.max_timestamp_so_far.offset <= 11
    segment.close()
    index_size = (tmp_path / "00000000000000000000.index").stat().st_size
    assert index_size % 8 == 0 and index_size < CONFIG.segment_index_bytes
    reopened = LogSegment.open(tmp_path, 0, CONFIG, created_ms=0)
    assert reopened.read_next_offset() == 12
    assert reopened.max_timestamp_so_far == segment.max_timestamp_so_far


def test_recover_rebuilds_indexes_and_cuts_garbage(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    fill(segment, 10)
    good = segment.size
    entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    segment.close()
    with open(tmp_path / "00000000000000000000.log", "ab") as f:
        f.write(b"\x00" * 100)
    (tmp_path / "00000000000000000000.index").write_bytes(b"junk")
    segment = LogSegment.open(tmp_path, 0, CONFIG, created_ms=0)
    assert segment.recover() == 100
    assert segment.size == good
    assert [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)] == entries


def test_corrupt_index_of_inactive_segment_is_rebuilt_on_first_use(tmp_path):
    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    fill(segment, 10)
    segment.close()
    (tmp_path / "00000000000000000000.index").write_bytes(b"\x00\x00\x00\x05\x7f\x00\x00\x00")
    reopened = LogSegment.open(tmp_path, 0, CONFIG, created_ms=0)
    region = reopened.read(20, 1)
    assert parse_kafka_python(region.read())[0][0] == 18
    assert (tmp_path / "00000000000000000000.index").stat().st_size % 8 == 0


def test_should_roll_exactly_when_an_index_is_full(tmp_path):
    # index every batch; the offset index holds 7 entries, the time index 4 (one slot is kept
    # for the roll entry), so with growing timestamps the time index fills first, and with one
    # timestamp only the offset index fills
    for growing, limit in ((True, 4), (False, 7)):
        directory = tmp_path / str(growing)
        directory.mkdir()
        config = LogConfig(index_interval_bytes=0, segment_index_bytes=60)
        segment = LogSegment.create(directory, 0, config, created_ms=0)
        appended = 0
        offset = 0
        while not segment.should_roll(
            messages_size=100,
            max_timestamp_in_messages=1000,
            max_offset_in_messages=offset,
            now_ms=0,
            config=config,
        ):
            data = make_batch(1, timestamp=1000 + appended if growing else 1000)
            rb.set_base_offset(data, 0, offset)
            segment.append(data, offset, rb.read_header(data).max_timestamp, offset)
            offset += 1
            appended += 1
        full = segment.time_index if growing else segment.offset_index
        assert full.is_full() and full.entries == limit
        assert appended == limit + 1  # the first append is never indexed (position 0)
        assert segment.offset_index.entries <= segment.offset_index.max_entries
        assert segment.time_index.entries <= segment.time_index.max_entries - 1


def test_should_roll(tmp_path):
    config = LogConfig(segment_bytes=1000, segment_ms=100, segment_index_bytes=4096)
    segment = LogSegment.create(tmp_path, 0, config, created_ms=0)
    args = {
        "max_timestamp_in_messages": 1000,
        "max_offset_in_messages": 0,
        "now_ms": 0,
        "config": config,
    }
    assert not segment.should_roll(messages_size=900, **args)
    fill(segment, 1)
    assert segment.should_roll(messages_size=1000 - segment.size + 1, **args)
    assert not segment.should_roll(messages_size=100, **args)
    args["max_timestamp_in_messages"] = 1002 + 101  # first batch max timestamp + segment.ms
    assert segment.should_roll(messages_size=10, **args)
    args["max_timestamp_in_messages"] = 1000
    args["max_offset_in_messages"] = 2**31
    assert segment.should_roll(messages_size=10, **args)


def test_the_active_segments_indexes_are_current_on_disk(tmp_path):
    """Kafka memory-maps the active segment's indexes, so other tools read current entries
    while the broker runs; so do we: every entry is in the file as soon as it is appended,
    without a flush, and the files are trimmed to their entries when the segment rolls."""
    from storage.index import OffsetIndex, TimeIndex

    segment = LogSegment.create(tmp_path, 0, CONFIG, created_ms=0)
    fill(segment, 20)
    entries = segment.offset_index.entries
    assert entries > 0 and segment.offset_index.mapped

    def on_disk() -> tuple[list, list]:
        index = OffsetIndex(segment.offset_index.path, 0, 4096)
        index.load(segment.size)
        times = TimeIndex(segment.time_index.path, 0, 4096)
        times.load(segment.size)
        return (
            [index.entry(i) for i in range(index.entries)],
            [times.entry(i) for i in range(times.entries)],
        )

    offsets, times = on_disk()
    assert offsets == [segment.offset_index.entry(i) for i in range(entries)]
    assert times == [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
    assert segment.offset_index.path.stat().st_size == 4096  # preallocated, as Kafka's
    # a truncation clears the removed entries on disk too
    segment.truncate_to(30, now_ms=0)
    offsets, _ = on_disk()
    assert offsets == [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
    assert all(o.offset < 30 for o in offsets)
    segment.on_become_inactive()
    assert not segment.offset_index.mapped
    assert segment.offset_index.path.stat().st_size == 8 * segment.offset_index.entries


def test_inactive_segments_open_their_file_when_read_within_a_budget(tmp_path):
    from storage import file_records

    budget = file_records.OPEN_FILES
    saved = budget.max_open
    budget.max_open = 2
    try:
        segments = []
        for base in (0, 100, 200, 300):
            s = LogSegment.create(tmp_path, base, CONFIG, created_ms=0)
            fill(s, 3, first_offset=base)
            s.on_become_inactive()
            s.close()
            segments.append(LogSegment.open(tmp_path, base, CONFIG, created_ms=0))
        assert not any(s.log.is_open for s in segments)  # nothing read yet
        regions = [s.read(s.base_offset, 10**6) for s in segments]
        # every read worked; at most two files stay open, the regions keep theirs
        assert all(r is not None and len(parse_kafka_python(r.read())) == 3 for r in regions)
        assert sum(s.log.is_open for s in segments) == 2
        assert budget.evictions >= 2
        # the active segment's file is pinned, whatever the budget
        active = LogSegment.create(tmp_path, 400, CONFIG, created_ms=0)
        for s in segments:
            s.read(s.base_offset, 10)
        assert active.log.is_open
    finally:
        budget.max_open = saved
