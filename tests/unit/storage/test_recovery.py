"""Crash tests: cut segment and index files at every byte, or append garbage, then recover."""

import logging
import os
import random
import shutil
import struct

import pytest

from protocol.records import batch as rb
from storage.config import LogConfig
from storage.loader import RecoveryReport, load_log
from storage.manager import LogManager
from tests.unit.storage.util import FakeClock, make_batch, parse_aiokafka, parse_kafka_python

CONFIG = LogConfig(segment_bytes=100_000, index_interval_bytes=60)
LOG = "00000000000000000000.log"
INDEX = "00000000000000000000.index"
TIMEINDEX = "00000000000000000000.timeindex"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A one-segment log of 7 batches (two compressed), closed cleanly; returns its directory
    and the (start, end, next offset) of every batch."""
    directory = tmp_path_factory.mktemp("ref") / "t-0"
    log = load_log(directory, CONFIG, clock=FakeClock(), had_clean_shutdown=True)
    bounds = []
    for i, (count, codec) in enumerate([(1, 0), (3, 0), (2, 1), (1, 0), (4, 3), (2, 0), (1, 0)]):
        data = make_batch(count, timestamp=1000 * (i + 1), compression=codec, value_size=5 + i)
        position = log.active_segment.size
        info = log.append(data, leader_epoch=i // 3)
        bounds.append((position, position + len(data), info.last_offset + 1))
    log.close()
    assert (directory / INDEX).stat().st_size >= 16  # a few index entries
    return directory, bounds


def copy(reference_dir, tmp_path):
    target = tmp_path / "t-0"
    shutil.copytree(reference_dir, target)
    return target


def recover(directory, *, clean=False):
    report = RecoveryReport()
    log = load_log(directory, CONFIG, clock=FakeClock(), had_clean_shutdown=clean, report=report)
    return log, report


def check_log(log, expected_batches):
    """The log holds exactly the first ``expected_batches`` reference batches, every offset
    reads back the batch holding it, and index entries point at batch starts."""
    data = log.read_batches(0) if log.log_end_offset > 0 else b""
    parsed = parse_kafka_python(data)
    assert len(parsed) == expected_batches
    assert parse_aiokafka(data) == parsed
    end = parsed[-1][1][-1] + 1 if parsed else 0
    assert log.log_end_offset == end
    for offset in range(end):
        region = log.read(offset, 1)
        assert offset in parse_kafka_python(region.read())[0][1]
    segment = log.active_segment
    for i in range(segment.offset_index.entries):
        offset, position = segment.offset_index.entry(i)
        header = rb.read_header(segment.log.pread(rb.HEADER_SIZE, position))
        assert header.last_offset == offset
    assert segment.max_timestamp_so_far.timestamp == (
        max(ts for b in parsed for ts in b[2]) if parsed else -1
    )


def test_cut_log_at_every_byte(reference, tmp_path):
    ref_dir, bounds = reference
    size = (ref_dir / LOG).stat().st_size
    for cut in range(size + 1):
        work = tmp_path / str(cut)
        directory = copy(ref_dir, work)
        os.truncate(directory / LOG, cut)
        log, report = recover(directory)
        whole = [b for b in bounds if b[1] <= cut]
        valid_end = whole[-1][1] if whole else 0
        assert log.active_segment.size == valid_end
        assert report.bytes_truncated == cut - valid_end
        check_log(log, len(whole))
        log.append(make_batch(2))  # the log takes appends after recovery
        assert log.log_end_offset == (whole[-1][2] if whole else 0) + 2
        shutil.rmtree(work)


@pytest.mark.parametrize("name", [INDEX, TIMEINDEX])
@pytest.mark.parametrize("clean", [False, True], ids=["unclean", "clean"])
def test_cut_index_at_every_byte(reference, tmp_path, name, clean):
    ref_dir, bounds = reference
    size = (ref_dir / name).stat().st_size
    for cut in range(size + 1):
        work = tmp_path / str(cut)
        directory = copy(ref_dir, work)
        os.truncate(directory / name, cut)
        log, report = recover(directory, clean=clean)
        assert report.bytes_truncated == 0
        check_log(log, len(bounds))
        shutil.rmtree(work)


GARBAGE = {
    "zeros": b"\x00" * 200,
    "random": bytes(random.Random(1).randrange(256) for _ in range(333)),
    "short": b"\x00\x00\x00\x00\x00\x00\x00\x1f\x00\x00",
    "huge-length": struct.pack(">qi", 20, 2**31 - 1) + b"\x00" * 60,
}


@pytest.mark.parametrize("kind", [*GARBAGE, "bad-crc", "repeated-batch", "bit-flip"])
def test_garbage_after_the_last_batch(reference, tmp_path, kind):
    ref_dir, bounds = reference
    directory = copy(ref_dir, tmp_path)
    path = directory / LOG
    original = path.read_bytes()
    last_start = bounds[-1][0]
    if kind in GARBAGE:
        data = original + GARBAGE[kind]
        expect = len(bounds)
    elif kind == "bad-crc":
        batch = bytearray(original[last_start:])
        rb.set_base_offset(batch, 0, bounds[-1][2])
        batch[-1] ^= 0xFF
        data = original + batch
        expect = len(bounds)
    elif kind == "repeated-batch":  # a valid batch whose offsets go backwards
        data = original + original[last_start:]
        expect = len(bounds)
    else:  # a flipped bit inside the fourth batch drops it and everything after it
        flipped = bytearray(original)
        flipped[bounds[3][0] + 70] ^= 0x10
        data = bytes(flipped)
        expect = 3
    path.write_bytes(data)
    log, report = recover(directory)
    assert report.bytes_truncated == len(data) - bounds[expect - 1][1]
    check_log(log, expect)


def test_preallocated_log_recovers(tmp_path):
    config = LogConfig(segment_bytes=50_000, preallocate=True, index_interval_bytes=60)
    directory = tmp_path / "t-0"
    log = load_log(directory, config, clock=FakeClock(), had_clean_shutdown=True)
    for _ in range(5):
        log.append(make_batch(2))
    assert (directory / LOG).stat().st_size == 50_000
    del log  # a crash: no close, the file keeps its zeros
    log = load_log(directory, config, clock=FakeClock(), had_clean_shutdown=False)
    assert log.log_end_offset == 10
    assert (directory / LOG).stat().st_size == 50_000  # the active segment, preallocated again
    log.append(make_batch(1))
    log.close()
    assert (directory / LOG).stat().st_size == log.active_segment.size  # trimmed on close
    assert len(parse_kafka_python((directory / LOG).read_bytes())) == 6


def test_corruption_in_an_unflushed_segment_drops_later_segments(tmp_path, caplog):
    config = LogConfig(segment_bytes=500, index_interval_bytes=60)
    directory = tmp_path / "t-0"
    log = load_log(directory, config, clock=FakeClock(), had_clean_shutdown=True)
    for i in range(30):
        log.append(make_batch(2, timestamp=i))
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    log.flush(bases[1])  # segments 0 is durable; the recovery point is bases[1]
    recovery_point = log.recovery_point
    log.close()
    victim = directory / f"{bases[2]:020d}.log"
    data = bytearray(victim.read_bytes())
    data[100] ^= 1
    victim.write_bytes(data)
    caplog.set_level(logging.WARNING)
    report = RecoveryReport()
    log = load_log(
        directory,
        config,
        clock=FakeClock(),
        recovery_point=recovery_point,
        had_clean_shutdown=False,
        report=report,
    )
    assert report.segments_recovered == 2  # bases[1] and bases[2]; bases[0] was flushed
    assert report.segments_deleted_after_corruption == bases[3:]
    assert [s.base_offset for s in log.segments] == bases[:3]
    assert report.truncations and report.truncations[0][0].name == victim.name
    assert f"{victim}" in caplog.text and "truncating" in caplog.text
    assert log.log_end_offset < bases[3]
    offsets = []
    for offset in range(log.log_end_offset):
        region = log.read(offset, 1)
        offsets.extend(parse_kafka_python(region.read())[0][1])
    assert sorted(set(offsets)) == list(range(log.log_end_offset))


def test_unclean_manager_restart_recovers(tmp_path):
    clock = FakeClock()
    m = LogManager([tmp_path], LogConfig(segment_bytes=500), clock)
    m.startup()
    log = m.get_or_create_log("t", 0)
    for _ in range(20):
        log.append(make_batch(2), leader_epoch=3)
    m.shutdown()
    (tmp_path / ".kafka_cleanshutdown").unlink()  # as if the broker died
    os.truncate(tmp_path / "t-0" / f"{log.active_segment.base_offset:020d}.log", 10**9)
    m = LogManager([tmp_path], LogConfig(segment_bytes=500), clock)
    reports = m.startup()
    assert reports[("t", 0)].segments_recovered == 1  # only the one after the recovery point
    assert reports[("t", 0)].bytes_truncated > 0
    assert m.get_log("t", 0).log_end_offset == 40
    assert m.get_log("t", 0).leader_epoch_cache.entries == [(3, 0)]
    m.shutdown()


def test_interrupted_compaction_swap_is_completed(reference, tmp_path):
    """A crash after the .swap rename: the swap replaces the segments it covers."""
    ref_dir, bounds = reference
    directory = copy(ref_dir, tmp_path)
    for name in (LOG, INDEX, TIMEINDEX):
        shutil.copy(directory / name, directory / (name + ".swap"))
    (directory / "00000000000000000099.log.cleaned").write_bytes(b"partial")
    (directory / "00000000000000000003.log.deleted").write_bytes(b"old")
    log, report = recover(directory)
    assert sorted(p.name for p in report.files_removed) == sorted(
        [
            "00000000000000000099.log.cleaned",
            "00000000000000000003.log.deleted",
            LOG,
            INDEX,
            TIMEINDEX,
        ]
    )
    assert report.swaps_completed
    assert not [n for n in os.listdir(directory) if n.endswith((".swap", ".cleaned", ".deleted"))]
    check_log(log, len(bounds))


@pytest.mark.parametrize("clean", [False, True], ids=["unclean", "clean"])
def test_plausible_garbage_after_the_index_entries(reference, tmp_path, clean):
    """Entries that keep increasing but point inside batches are caught (the batch at the last
    entry must pass its CRC) and the index is rebuilt."""
    ref_dir, bounds = reference
    directory = copy(ref_dir, tmp_path)
    index = directory / INDEX
    last_offset, last_position = struct.unpack(">ii", index.read_bytes()[-8:])
    with open(index, "ab") as f:
        f.write(struct.pack(">ii", last_offset + 1, last_position + 7))
    log, _ = recover(directory, clean=clean)
    check_log(log, len(bounds))
