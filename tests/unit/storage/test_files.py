import pytest

from storage import files


def test_segment_names_are_20_digit_zero_padded():
    assert files.filename_prefix_from_offset(42) == "00000000000000000042"
    assert files.log_file(files.Path("/d"), 7).name == "00000000000000000007.log"
    assert files.index_file(files.Path("/d"), 7).name == "00000000000000000007.index"
    assert files.time_index_file(files.Path("/d"), 7, ".deleted").name == (
        "00000000000000000007.timeindex.deleted"
    )
    assert files.offset_from_file_name("00000000000000000042.log.swap") == 42


@pytest.mark.parametrize("name", ["42.log", "abc.log", "0000000000000000004x.log"])
def test_bad_segment_names(name):
    with pytest.raises(ValueError):
        files.offset_from_file_name(name)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("t-0", ("t", 0)),
        ("my-topic-12", ("my-topic", 12)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49)),
        ("a.b_c-3.0123456789abcdef0123456789abcdef-delete", ("a.b_c", 3)),
        ("t-1.abc-future", ("t", 1)),
    ],
)
def test_parse_log_dir_name(name, expected):
    assert files.parse_log_dir_name(name) == expected


@pytest.mark.parametrize("name", ["t", "t-", "-1", "t-x", "t-1-delete", "t-\u0661"])
def test_bad_log_dir_names(name):
    with pytest.raises(ValueError):
        files.parse_log_dir_name(name)


def test_deleted_dir_name_round_trips():
    name = files.deleted_log_dir_name("my-topic", 5)
    assert name.endswith("-delete")
    assert files.parse_log_dir_name(name) == ("my-topic", 5)


def test_write_atomically(tmp_path):
    path = tmp_path / "f"
    files.write_atomically(path, b"one")
    files.write_atomically(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_deferred_sync_turns_many_fsyncs_into_one_flush(tmp_path, monkeypatch):
    """Inside the block (this thread only) files are written and renamed at once but not
    fsynced; at its end, one flush per file system; a nested block leaves it to the outer."""
    fsyncs: list[int] = []
    flushed: list[str] = []
    real_fsync = files.os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    monkeypatch.setattr(files, "sync_filesystem", lambda d: flushed.append(str(d)))
    with files.deferred_sync():
        with files.deferred_sync():
            for i in range(20):
                directory = tmp_path / f"t-{i}"
                directory.mkdir()
                files.write_atomically(directory / "partition.metadata", b"x")
                files.fsync_dir(directory)
        assert (tmp_path / "t-19" / "partition.metadata").read_bytes() == b"x"
        assert fsyncs == [] and flushed == []
    assert fsyncs == [] and len(flushed) == 1  # one file system
    files.write_atomically(tmp_path / "after", b"y")  # outside a block: fsynced as before
    assert len(fsyncs) == 2  # the file and its directory


def test_a_pool_thread_shares_the_deferred_sync_block(tmp_path, monkeypatch):
    """A function wrapped inside a block defers its fsyncs to that block when a pool's thread
    runs it: nothing is fsynced, and the block's end flushes what the threads wrote."""
    from concurrent.futures import ThreadPoolExecutor

    fsyncs: list[int] = []
    flushed: list[str] = []
    real_fsync = files.os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    monkeypatch.setattr(files, "sync_filesystem", lambda d: flushed.append(str(d)))

    def write(i: int) -> int:
        directory = tmp_path / f"t-{i}"
        directory.mkdir()
        files.write_atomically(directory / "partition.metadata", b"x")
        return i

    assert files.sharing_deferred_sync(write) is write  # no block open: nothing to share
    with files.deferred_sync():
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(files.sharing_deferred_sync(write), range(16))) == list(range(16))
        assert fsyncs == [] and flushed == []
    assert fsyncs == [] and len(flushed) == 1
    # the pool's threads left no block open behind them
    with ThreadPoolExecutor(1) as pool:
        pool.submit(write, 99).result()
    assert len(fsyncs) == 2
