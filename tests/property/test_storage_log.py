"""A PartitionLog against a model: random appends, reads, rolls, truncations, DeleteRecords,
retention, clean restarts and crashes (the active segment cut at a random byte)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from protocol.records import batch as rb
from storage.config import LogConfig
from storage.errors import OffsetOutOfRange, RecordBatchTooLarge
from storage.loader import load_log
from tests.unit.storage.util import FakeClock, make_batch, parse_kafka_python

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=90, segment_index_bytes=8 * 6)


class LogMachine(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.root = Path(tempfile.mkdtemp(prefix="storage-prop-"))
        self.directory = self.root / "t-0"
        self.clock = FakeClock()
        self.log = load_log(self.directory, CONFIG, clock=self.clock, had_clean_shutdown=True)
        #: (base offset, last offset, bytes as stored) of every batch still in the log
        self.batches: list[tuple[int, int, bytes]] = []
        self.log_start = 0
        self.log_end = 0

    def teardown(self):
        if hasattr(self, "root"):
            self.log.close()
            shutil.rmtree(self.root, ignore_errors=True)

    # --- operations ---------------------------------------------------------------------------

    @rule(
        counts=st.lists(st.integers(1, 5), min_size=1, max_size=3),
        value_size=st.integers(0, 120),
        epoch=st.integers(0, 3),
    )
    def append(self, counts, value_size, epoch):
        data = bytearray()
        for count in counts:
            data += make_batch(count, value_size=value_size, timestamp=self.clock.now_ms)
        if len(data) > CONFIG.segment_bytes:
            with pytest.raises(RecordBatchTooLarge):
                self.log.append(data)
            return
        info = self.log.append(data, leader_epoch=max(epoch, self.log.latest_epoch or 0))
        assert info.first_offset == self.log_end
        pos = 0
        for header in rb.validate_batches(data):  # offsets were rewritten in place
            self.batches.append(
                (header.base_offset, header.last_offset, bytes(data[pos : pos + header.size]))
            )
            pos += header.size
        self.log_end = info.last_offset + 1
        self.clock.advance(10)

    @rule()
    def roll(self):
        self.log.roll()
        self._sync_start()

    @rule(data=st.data(), max_bytes=st.integers(1, 2000))
    def read(self, data, max_bytes):
        offset = data.draw(st.integers(max(self.log_start - 2, 0), self.log_end + 2))
        if offset < self.log_start or offset > self.log_end:
            try:
                self.log.read(offset, max_bytes)
            except OffsetOutOfRange:
                return
            raise AssertionError(f"read({offset}) outside [{self.log_start}, {self.log_end}]")
        region = self.log.read(offset, max_bytes)
        first = next((i for i, b in enumerate(self.batches) if b[1] >= offset), None)
        if first is None:  # at the log end, or in a gap truncation left before it
            assert region is None
            return
        got = region.read()
        expected = b""
        taken = 0
        for _, _, batch in self.batches[first:]:
            if len(expected) + len(batch) > len(got):
                break
            expected += batch
            taken += 1
        assert got == expected, (offset, max_bytes)
        assert taken >= 1 and (len(got) <= max_bytes or taken == 1)
        assert parse_kafka_python(got)[0][0] == self.batches[first][0]

    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(self.log_start, self.log_end))
        self.log.truncate_to(target)
        if target < self.log_end:
            # a batch holding the target goes whole and the end moves to its base offset
            cut = next((b for b in self.batches if b[1] >= target), None)
            if cut is not None and cut[0] < target:
                target = cut[0]
            self.batches = [b for b in self.batches if b[1] < target]
            self.log_end = target
            self.log_start = min(self.log_start, target)

    @rule(data=st.data())
    def delete_records(self, data):
        target = data.draw(st.integers(self.log_start, self.log_end))
        assert self.log.delete_records_before(target) == target
        self.log_start = target

    @rule(retention_bytes=st.integers(0, 3000))
    def retention(self, retention_bytes):
        self.log.config = LogConfig(
            segment_bytes=CONFIG.segment_bytes,
            index_interval_bytes=CONFIG.index_interval_bytes,
            segment_index_bytes=CONFIG.segment_index_bytes,
            retention_bytes=retention_bytes,
        )
        self.log.delete_old_segments()
        self.log.config = CONFIG
        new_start = self.log.log_start_offset
        assert new_start >= self.log_start
        self.log_start = new_start
        self.log.delete_pending_files(force=True)

    @rule()
    def restart_clean(self):
        recovery_point = self.log.log_end_offset
        self.log.close()
        self.log = load_log(
            self.directory,
            CONFIG,
            clock=self.clock,
            recovery_point=recovery_point,
            log_start_offset=self.log_start,
            had_clean_shutdown=True,
        )
        self._sync_start()

    @precondition(lambda self: self.log.active_segment.size > 0)
    @rule(data=st.data())
    def crash(self, data):
        """The process dies: the active segment keeps a random prefix of its bytes."""
        active = self.log.active_segment
        cut = data.draw(st.integers(0, active.size))
        recovery_point = min(self.log.recovery_point, active.base_offset)
        path = active.log.path
        self.log.delete_pending_files(force=True)
        self.log = None  # no close: indexes and files stay as they are
        os.truncate(path, cut)
        self.log = load_log(
            self.directory,
            CONFIG,
            clock=self.clock,
            recovery_point=recovery_point,
            log_start_offset=self.log_start,
            had_clean_shutdown=False,
        )
        kept = []
        position = 0
        for batch in self.batches:
            if batch[0] >= active.base_offset:
                position += len(batch[2])
                if position > cut:
                    break
            kept.append(batch)
        self.batches = kept
        self.log_end = kept[-1][1] + 1 if kept else active.base_offset
        if self.log_end < active.base_offset:
            self.log_end = active.base_offset
        self.log_end = max(self.log_end, self.log_start)
        self._sync_start()

    def _sync_start(self):
        """The log start may rise to the first segment's base when no batch lies below it."""
        first_base = self.log.segments.first.base_offset
        if first_base > self.log_start:
            assert all(b[1] < self.log_start or b[0] >= first_base for b in self.batches)
            self.log_start = first_base

    # --- invariants ---------------------------------------------------------------------------

    @invariant()
    def offsets_agree(self):
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.log_end
        assert self.log.log_start_offset == self.log_start
        assert self.log.high_watermark == self.log_end
        bases = [s.base_offset for s in self.log.segments]
        assert bases == sorted(bases)
        for segment in self.log.segments:
            index = segment.offset_index
            for i in range(index.entries):
                offset, position = index.entry(i)
                header = rb.read_header(segment.log.pread(rb.HEADER_SIZE, position))
                assert header.last_offset == offset


LogMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestStorageLog = LogMachine.TestCase
