"""Compaction against a model: whatever the appends, cleaning passes and clock, every key's latest
record survives at its original offset, superseded records go, and tombstones stay until their
batch's delete horizon has passed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records import batch as rb
from storage.config import LogConfig, LogManagerConfig
from storage.manager import LogManager
from tests.unit.storage.util import FakeClock, make_batch, record_values

KEYS = [b"a", b"b", b"c", b"d", b"e"]
DELETE_RETENTION_MS = 1000

pair = st.tuples(st.sampled_from([*KEYS, None]), st.one_of(st.none(), st.binary(max_size=20)))
op = st.one_of(
    st.tuples(
        st.just("append"), st.lists(pair, min_size=1, max_size=4), st.sampled_from([0, 1, 3])
    ),
    st.tuples(st.just("clean"), st.none(), st.none()),
    st.tuples(st.just("roll"), st.none(), st.none()),
    st.tuples(st.just("wait"), st.integers(0, 2 * DELETE_RETENTION_MS), st.none()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=25))
def test_compaction_keeps_latest_per_key(ops):
    root = Path(tempfile.mkdtemp(prefix="storage-clean-"))
    clock = FakeClock()
    manager = LogManager([root], LogConfig(), clock, manager_config=LogManagerConfig())
    manager.startup()
    try:
        log = manager.get_or_create_log(
            "c",
            0,
            config_overrides={
                "cleanup.policy": "compact",
                "segment.bytes": 400,
                "index.interval.bytes": 64,
                "delete.retention.ms": DELETE_RETENTION_MS,
            },
        )
        written: list[tuple[int, bytes | None, bytes | None]] = []
        #: offset -> earliest time a tombstone at that offset may be gone
        cleaned_at: dict[int, int] = {}
        for kind, arg, codec in ops:
            if kind == "append":
                keys = [k for k, _ in arg]
                values = [v if v is not None else None for _, v in arg]
                data = make_batch(
                    len(arg), keys=keys, values=values, compression=codec, timestamp=clock.now_ms
                )
                info = log.append(data)
                written.extend(
                    (info.first_offset + i, k, v)
                    for i, (k, v) in enumerate(zip(keys, values, strict=True))
                )
            elif kind == "clean":
                stats = manager.cleaner.clean(log, clock.now_ms)
                if stats is not None and stats.groups_aborted == 0:
                    # superseded records below the pass's end offset are gone
                    present = {o for o, _, _ in record_values(log.read_batches(0))}
                    end = stats.end_offset
                    last_below: dict[bytes, int] = {}
                    for offset, key, _ in written:
                        if key is not None and offset < end:
                            last_below[key] = offset
                    for offset, key, _ in written:
                        if offset < end and (key is None or last_below[key] > offset):
                            assert offset not in present, (offset, key)
                for offset, _key, value in written:
                    if value is None and offset < log.active_segment.base_offset:
                        cleaned_at.setdefault(offset, clock.now_ms + DELETE_RETENTION_MS)
            elif kind == "roll":
                log.roll()
            else:
                clock.advance(arg)
            check(log, written, cleaned_at, clock.now_ms)
    finally:
        manager.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def check(log, written, cleaned_at, now_ms):
    data = log.read_batches(0)
    for _, header in rb.iter_batches(data):  # CRCs valid, offsets in order
        assert header.magic == 2
    present = record_values(data)
    offsets = [o for o, _, _ in present]
    assert offsets == sorted(set(offsets))
    by_offset = {o: (k, v) for o, k, v in written}
    active_base = log.active_segment.base_offset
    latest: dict[bytes, int] = {}
    for offset, key, _ in written:
        if key is not None:
            latest[key] = offset
    for offset, key, value in present:
        assert by_offset[offset] == (key, value)  # nothing altered, offsets kept
    present_offsets = set(offsets)
    for offset, key, value in written:
        if offset >= active_base:
            assert offset in present_offsets  # the active segment is never cleaned
        elif key is not None and latest[key] == offset:
            if value is not None:
                assert offset in present_offsets  # the latest value of a key survives
            elif now_ms < cleaned_at.get(offset, 2**62):
                assert offset in present_offsets  # a tombstone stays until its horizon
    # every offset still reads
    for offset in range(log.log_start_offset, log.log_end_offset):
        region = log.read(offset, 1)
        assert region is not None or offset >= max(present_offsets, default=-1)
