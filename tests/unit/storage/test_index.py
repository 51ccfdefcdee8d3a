import struct

import pytest

from storage.errors import CorruptIndex
from storage.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_and_file_format(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 64)
    index.mark_loaded_empty()
    index.preallocate()
    assert path.stat().st_size == 64
    assert index.lookup(150) == (100, 0)
    index.append(103, 200)
    index.append(110, 400)
    index.append(120, 900)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(103) == (103, 200)
    assert index.lookup(109) == (103, 200)
    assert index.lookup(10**12) == (120, 900)
    with pytest.raises(ValueError):
        index.append(120, 1000)  # not above the last offset
    index.flush()
    data = path.read_bytes()
    assert len(data) == 64  # still preallocated
    assert data[:24] == struct.pack(">iiiiii", 3, 200, 10, 400, 20, 900)
    index.trim()
    assert path.read_bytes() == data[:24]


def test_offset_index_full_and_truncate(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 0, 8 * 3 + 5)
    index.mark_loaded_empty()
    assert index.max_entries == 3
    for i in range(3):
        index.append(i + 1, i * 10)
    assert index.is_full()
    with pytest.raises(ValueError):
        index.append(9, 99)
    index.truncate_to(2)
    assert index.entries == 1 and index.lookup(5) == (1, 0)
    assert not index.can_append_offset(2**31) and index.can_append_offset(2**31 - 1)


def test_offset_index_load_drops_preallocated_zeros(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">iiii", 5, 100, 9, 300) + b"\0" * 40 + b"\1\2\3")
    index = OffsetIndex(path, 0, 1024)
    index.load(log_size=1000)
    assert index.entries == 2 and index.lookup(9) == (9, 300)


@pytest.mark.parametrize(
    "entries",
    [
        [(5, 100), (4, 200)],  # offsets go back
        [(5, 100), (9, 50)],  # positions go back
        [(5, 100), (9, 5000)],  # points past the log
        [(-1, 0)],
    ],
)
def test_offset_index_sanity_check(tmp_path, entries):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    with pytest.raises(CorruptIndex):
        OffsetIndex(path, 0, 1024).load(log_size=1000)


def test_last_position_within(tmp_path):
    index = OffsetIndex(tmp_path / "i", 0, 1024)
    index.mark_loaded_empty()
    for offset, position in [(9, 100), (19, 200), (29, 300)]:
        index.append(offset, position)
    assert index.last_position_within(250, 1000) == 200
    assert index.last_position_within(1000, 20) == 200  # entry 29's batch may reach offset 20+
    assert index.last_position_within(1000, 19) == 100
    assert index.last_position_within(50, 1000) == 0


def test_time_index(tmp_path):
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10, 12 * 4)
    index.mark_loaded_empty()
    assert index.last_entry() == (-1, 10)
    index.maybe_append(1000, 12)
    index.maybe_append(1000, 13)  # same timestamp: ignored
    index.maybe_append(900, 14)  # lower: ignored
    index.maybe_append(2000, 20)
    assert index.entries == 2
    assert index.lookup(999) == (-1, 10)
    assert index.lookup(1500) == (1000, 12)
    assert index.lookup(5000) == (2000, 20)
    index.maybe_append(3000, 25)
    assert index.is_full()  # one slot stays free for the roll entry
    with pytest.raises(ValueError):
        index.maybe_append(4000, 26)
    index.maybe_append(4000, 26, skip_full_check=True)
    index.trim()
    assert path.read_bytes() == b"".join(
        struct.pack(">qi", t, o) for t, o in [(1000, 2), (2000, 10), (3000, 15), (4000, 16)]
    )
    loaded = TimeIndex(path, 10, 12 * 4)
    loaded.load(0)
    assert loaded.last_entry() == (4000, 26)
    loaded.truncate_to(20)
    assert loaded.last_entry() == (1000, 12)


def test_preallocated_zeros_load_as_an_empty_index(tmp_path):
    # an active segment's files right after preallocation (or a crash before any flush)
    offset_path = tmp_path / "00000000000000000100.index"
    time_path = tmp_path / "00000000000000000100.timeindex"
    offset_path.write_bytes(b"\0" * 64)
    time_path.write_bytes(b"\0" * 48)
    offset_index = OffsetIndex(offset_path, 100, 64)
    offset_index.load(log_size=0)
    assert offset_index.entries == 0  # not a phantom (100, 0) entry
    assert offset_index.lookup(150) == (100, 0)
    time_index = TimeIndex(time_path, 100, 48)
    time_index.load(log_size=0)
    assert time_index.entries == 0  # not a phantom (0, 100) entry
    assert time_index.last_entry() == (-1, 100)
    assert time_index.lookup(0) == (-1, 100)


def test_offset_index_entry_on_an_empty_log_is_corrupt(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">ii", 3, 0) + b"\0" * 8)
    with pytest.raises(CorruptIndex):
        OffsetIndex(path, 0, 1024).load(log_size=0)
