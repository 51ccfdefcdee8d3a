"""The coordinator runtime's rules: state changes only once a write is committed, failures and
late callbacks change nothing, superseded loads are dropped, shards never wait for each other.

The log here is a fake whose commits the test releases by hand: that is the seam the runtime
defines (the broker's log commits when the ISR has the records)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from coordination.group.config import GroupConfig, partition_for
from coordination.group.coordinator import GroupCoordinator
from coordination.group.metadata import OffsetAndMetadata
from coordination.runtime.runtime import CoordinatorRuntime, Record, ShardContext
from protocol.error_codes import ErrorCode
from tests.unit.coordination.test_group_coordinator import FakeScheduler

E = ErrorCode


class HeldLog:
    """Appends wait until the test commits or fails them."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, list[Record], Callable[[ErrorCode | None], None]]] = []

    def append(
        self,
        partition: int,
        records: Sequence[Record],
        callback: Callable[[ErrorCode | None], None],
        **_: object,
    ) -> None:
        self.pending.append((partition, list(records), callback))

    def commit_all(self) -> None:
        pending, self.pending = self.pending, []
        for _, _, callback in pending:
            callback(None)

    def fail_all(self, code: ErrorCode) -> None:
        pending, self.pending = self.pending, []
        for _, _, callback in pending:
            callback(code)


def coordinator() -> tuple[GroupCoordinator, HeldLog, FakeScheduler]:
    sched = FakeScheduler()
    log = HeldLog()
    gc = GroupCoordinator(GroupConfig(num_partitions=4), sched, log, clock=sched.clock)
    gc.startup()
    for p in range(4):
        assert gc.complete_loading(p, gc.begin_loading(p), [])
    return gc, log, sched


def commit(gc: GroupCoordinator, group: str = "g", offset: int = 5) -> list[dict]:
    out: list[dict] = []
    gc.commit_offsets(
        group_id=group,
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={("t", 0): OffsetAndMetadata(offset, -1, "", 0)},
        callback=out.append,
    )
    return out


def test_offsets_change_only_once_the_write_is_committed() -> None:
    gc, log, _ = coordinator()
    answers = commit(gc)
    assert answers == [] and len(log.pending) == 1
    assert gc.fetch_offsets(group_id="g", partitions=[("t", 0)]) == (E.NONE, {("t", 0): None})
    log.commit_all()
    assert answers == [{("t", 0): E.NONE}]
    _, found = gc.fetch_offsets(group_id="g", partitions=[("t", 0)])
    assert found[("t", 0)] is not None and found[("t", 0)].offset == 5


def test_a_failed_write_changes_nothing_and_answers_the_mapped_error() -> None:
    gc, log, _ = coordinator()
    answers = commit(gc)
    log.fail_all(E.NOT_LEADER_OR_FOLLOWER)
    assert answers == [{("t", 0): E.NOT_COORDINATOR}]
    assert gc.committed_offsets("g") == {}


def test_a_callback_after_unloading_touches_nothing() -> None:
    gc, log, _ = coordinator()
    answers = commit(gc)
    gc.unload(partition_for("g", 4))
    log.commit_all()
    assert answers == [{("t", 0): E.NOT_COORDINATOR}]
    assert commit(gc) == [{("t", 0): E.NOT_COORDINATOR}]


def test_the_leaders_sync_is_answered_once_the_group_is_stored() -> None:
    from coordination.group.config import JoinRequest

    gc, log, sched = coordinator()
    joins: list = []
    request = JoinRequest(
        group_id="g",
        member_id="",
        group_instance_id="static-1",
        require_known_member_id=False,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=1000,
        session_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=[("range", b"")],
    )
    gc.join_group(request, joins.append)
    sched.advance(3000)
    (joined,) = joins
    assert joined.error == E.NONE
    log.commit_all()  # nothing pending yet, but harmless
    synced: list = []
    gc.sync_group(
        group_id="g",
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id="static-1",
        protocol_type="consumer",
        protocol_name="range",
        assignments={joined.member_id: b"A"},
        callback=synced.append,
    )
    assert synced == []  # the group record is not committed yet
    log.commit_all()
    assert synced[0].error == E.NONE and synced[0].assignment == b"A"


class Counter:
    """A trivial shard: counts the records replayed into it."""

    def __init__(self, context: ShardContext) -> None:
        self.context = context
        self.replayed = 0
        self.unloaded_with: ErrorCode | None = None

    def replay(self, records: Iterable[Record]) -> None:
        self.replayed += sum(1 for _ in records)

    def loaded(self) -> None:
        pass

    def unloaded(self, error: ErrorCode) -> None:
        self.unloaded_with = error


def runtime() -> CoordinatorRuntime[Counter]:
    sched = FakeScheduler()
    rt: CoordinatorRuntime[Counter] = CoordinatorRuntime(
        "test", Counter, HeldLog(), sched, clock=sched.clock
    )
    rt.startup()
    return rt


def test_a_superseded_load_is_dropped_and_requests_wait_for_the_load() -> None:
    rt = runtime()
    first = rt.begin_loading(0)
    second = rt.begin_loading(0)
    assert rt.shard_error(0) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert not rt.complete_loading(0, first, [(b"k", b"v")])
    assert rt.complete_loading(0, second, [(b"k", b"v"), (b"k2", None)])
    assert rt.with_shard(0, lambda s: s.replayed, lambda e: -1) == 2
    assert rt.shard_error(1) == E.NOT_COORDINATOR


def test_shards_never_wait_for_each_other() -> None:
    rt = runtime()
    for p in (0, 1):
        rt.complete_loading(p, rt.begin_loading(p), [])
    inside = threading.Event()
    release = threading.Event()

    def hold(shard: Counter) -> None:
        inside.set()
        release.wait(10)

    holder = threading.Thread(target=rt.with_shard, args=(0, hold, lambda e: None))
    holder.start()
    assert inside.wait(5)
    # shard 0 is busy (its lock held); shard 1 serves at once
    assert rt.with_shard(1, lambda s: "served", lambda e: e) == "served"
    release.set()
    holder.join(5)


def test_unloading_answers_waiters_and_shutdown_refuses() -> None:
    rt = runtime()
    rt.complete_loading(0, rt.begin_loading(0), [])
    shard = rt.with_shard(0, lambda s: s, lambda e: None)
    assert shard is not None
    rt.unload(0)
    assert shard.unloaded_with == E.NOT_COORDINATOR
    rt.complete_loading(1, rt.begin_loading(1), [])
    other = rt.with_shard(1, lambda s: s, lambda e: None)
    rt.shutdown()
    assert other is not None and other.unloaded_with == E.COORDINATOR_NOT_AVAILABLE
    assert rt.shard_error(1) == E.COORDINATOR_NOT_AVAILABLE
