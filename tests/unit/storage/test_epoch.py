from storage.epoch import LeaderEpochFileCache


def test_assign_and_query(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochFileCache(path)
    assert cache.latest_epoch() is None
    assert cache.assign(0, 0)
    assert not cache.assign(0, 5)  # same epoch, later offset: no change
    assert cache.assign(2, 10)
    assert not cache.assign(1, 20)  # older epoch
    assert cache.assign(4, 30)
    assert path.read_text() == "0\n3\n0 0\n2 10\n4 30\n"
    assert [cache.epoch_for_offset(o) for o in (0, 9, 10, 29, 30, 99)] == [0, 0, 2, 2, 4, 4]
    assert cache.end_offset_for(0, 50) == (0, 10)
    assert cache.end_offset_for(1, 50) == (0, 10)
    assert cache.end_offset_for(2, 50) == (2, 30)
    assert cache.end_offset_for(4, 50) == (4, 50)
    # an epoch above every entry is unknown (Kafka's LeaderEpochFileCache.endOffsetFor), not the
    # latest epoch's end: a consumer validating a position from a newer leader must not trust it
    assert cache.end_offset_for(9, 50) == (-1, -1)
    assert LeaderEpochFileCache(path).entries == cache.entries


def test_truncation(tmp_path):
    cache = LeaderEpochFileCache(tmp_path / "c")
    for epoch, offset in [(0, 0), (1, 10), (2, 20)]:
        cache.assign(epoch, offset)
    cache.truncate_from_end(15)
    assert [tuple(e) for e in cache.entries] == [(0, 0), (1, 10)]
    cache.truncate_from_start(12)
    assert [tuple(e) for e in cache.entries] == [(1, 12)]
    cache.assign(3, 40)
    cache.truncate_from_start(50)
    assert [tuple(e) for e in cache.entries] == [(3, 50)]
    # older than every entry: the requested epoch with the first entry's start (what is left)
    assert cache.end_offset_for(0, 60) == (0, 50)
    assert cache.end_offset_for(-1, 60) == (-1, -1)
