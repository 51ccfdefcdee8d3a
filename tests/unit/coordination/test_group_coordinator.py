"""GroupCoordinator as a state machine: a fake clock and scheduler, an in-memory log."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence

import pytest

from coordination.group.classic import NEW_MEMBER_JOIN_TIMEOUT_MS
from coordination.group.config import (
    DEAD_GROUP,
    GroupConfig,
    JoinRequest,
    java_string_hash,
    partition_for,
)
from coordination.group.consumer_protocol import encode_assignment, encode_subscription
from coordination.group.coordinator import GroupCoordinator
from coordination.group.metadata import GroupState, JoinResult, OffsetAndMetadata, SyncResult
from coordination.group.records import (
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
)
from protocol.error_codes import ErrorCode

E = ErrorCode


class FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeScheduler:
    """Timers fire only when the test advances the clock. ``ignore_cancel``: cancelled timers
    fire anyway (a cancel that loses the race with a timer already waiting for the lock)."""

    def __init__(self, *, ignore_cancel: bool = False) -> None:
        self.now = 1_000_000
        self.ignore_cancel = ignore_cancel
        #: how many timers were ever scheduled
        self.scheduled = 0
        self._heap: list[tuple[int, int, FakeTimer, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._soon: list[Callable[[], None]] = []

    def clock(self) -> int:
        return self.now

    def now_ms(self) -> int:
        return self.now

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer()
        self.scheduled += 1
        heapq.heappush(self._heap, (self.now + delay_ms, next(self._seq), timer, callback))
        return timer

    def soon(self, callback: Callable[[], None]) -> None:
        self._soon.append(callback)

    def run_soon(self) -> None:
        """What the request's thread runs once its answer is on its way."""
        while self._soon:
            self._soon.pop(0)()

    def advance(self, ms: int) -> None:
        self.run_soon()
        target = self.now + ms
        while self._heap and self._heap[0][0] <= target:
            due, _, timer, callback = heapq.heappop(self._heap)
            self.now = max(self.now, due)
            if not timer.cancelled or self.ignore_cancel:
                callback()
        self.now = target

    def pending(self) -> int:
        return sum(1 for _, _, t, _ in self._heap if not t.cancelled)


class MemoryLog:
    """A partition is a list; a record's offset is its index."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail_with: ErrorCode | None = None

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        callback: Callable[[ErrorCode | None], None],
        *,
        on_appended: Callable[[int], None] | None = None,
        **_: object,
    ) -> None:
        if self.fail_with is not None:
            callback(self.fail_with)
            return
        stored = self.partitions.setdefault(partition, [])
        base = len(stored)
        stored.extend(records)
        if on_appended is not None:
            on_appended(base)
        callback(None)


CONFIG = GroupConfig(
    num_partitions=4,
    min_session_timeout_ms=100,
    max_session_timeout_ms=60_000,
    initial_rebalance_delay_ms=300,
    offsets_retention_ms=10_000,
    offsets_retention_check_interval_ms=1_000,
)


class Harness:
    def __init__(
        self, config: GroupConfig = CONFIG, *, load: bool = True, ignore_cancel: bool = False
    ) -> None:
        self.sched = FakeScheduler(ignore_cancel=ignore_cancel)
        self.log = MemoryLog()
        self.gc = GroupCoordinator(config, self.sched, self.log, clock=self.sched.clock)
        self.gc.startup()
        if load:
            for p in range(config.num_partitions):
                self.gc.complete_loading(p, self.gc.begin_loading(p), [])

    def join(
        self,
        group: str = "g",
        member_id: str = "",
        *,
        instance: str | None = None,
        require_known: bool = True,
        session_ms: int = 1000,
        rebalance_ms: int = 2000,
        protocols: list[tuple[str, bytes]] | None = None,
        skip: bool = False,
    ) -> list[JoinResult]:
        out: list[JoinResult] = []
        self.gc.join_group(
            JoinRequest(
                group_id=group,
                member_id=member_id,
                group_instance_id=instance,
                require_known_member_id=require_known,
                client_id="client",
                client_host="/127.0.0.1",
                rebalance_timeout_ms=rebalance_ms,
                session_timeout_ms=session_ms,
                protocol_type="consumer",
                protocols=protocols or [("range", encode_subscription(["t"]))],
                supports_skip_assignment=skip,
            ),
            out.append,
        )
        return out

    def join_new(self, group: str = "g", **kw: object) -> list[JoinResult]:
        """MEMBER_ID_REQUIRED, then the real join (which usually waits)."""
        (first,) = self.join(group, **kw)  # type: ignore[arg-type]
        assert first.error == E.MEMBER_ID_REQUIRED
        return self.join(group, first.member_id, **kw)  # type: ignore[arg-type]

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        instance: str | None = None,
    ) -> list[SyncResult]:
        out: list[SyncResult] = []
        self.gc.sync_group(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments or {},
            callback=out.append,
        )
        return out

    def commit_offsets(self, **kw: object) -> dict[tuple[str, int], ErrorCode]:
        out: list[dict[tuple[str, int], ErrorCode]] = []
        self.gc.commit_offsets(callback=out.append, **kw)  # type: ignore[arg-type]
        (result,) = out
        return result

    def delete_offsets(self, **kw: object) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        out: list[tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]] = []
        self.gc.delete_offsets(callback=lambda e, r: out.append((e, r)), **kw)  # type: ignore[arg-type]
        (result,) = out
        return result

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        out: list[dict[str, ErrorCode]] = []
        self.gc.delete_groups(group_ids, out.append)
        (result,) = out
        return result

    def heartbeat(self, group: str, member_id: str, generation: int) -> ErrorCode:
        return self.gc.heartbeat(
            group_id=group, member_id=member_id, group_instance_id=None, generation_id=generation
        )

    def stable_group(self, n: int, group: str = "g") -> list[JoinResult]:
        waits = [self.join_new(group) for _ in range(n)]
        # the second member extends the initial delay once
        self.sched.advance(2 * CONFIG.initial_rebalance_delay_ms)
        results = [w[0] for w in waits]
        assert all(r.error == E.NONE for r in results)
        leader = next(r for r in results if r.members)
        assignments = {r.member_id: encode_assignment({"t": [i]}) for i, r in enumerate(results)}
        syncs = [self.sync(group, r.member_id, r.generation_id) for r in results if r is not leader]
        mine = self.sync(group, leader.member_id, leader.generation_id, assignments)
        assert mine[0].error == E.NONE and all(s[0].error == E.NONE for s in syncs)
        assert self.gc.group(group).state == GroupState.STABLE  # type: ignore[union-attr]
        return results


def test_java_hash_and_partition_rule() -> None:
    # values from Java's "...".hashCode()
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("test-group", 50) == abs(java_string_hash("test-group")) % 50
    # UTF-16 code units, surrogate pairs included
    assert java_string_hash("é😀") == (0xE9 * 31 + 0xD83D) * 31 + 0xDE00


def test_member_id_required_then_delayed_initial_rebalance() -> None:
    h = Harness()
    first = h.join()
    assert first[0].error == E.MEMBER_ID_REQUIRED and first[0].member_id.startswith("client-")
    waiting = h.join("g", first[0].member_id)
    assert waiting == []
    assert h.gc.group("g").state == GroupState.PREPARING_REBALANCE  # type: ignore[union-attr]
    h.sched.advance(299)
    assert waiting == []
    h.sched.advance(1)
    (result,) = waiting
    assert result.error == E.NONE and result.generation_id == 1
    assert result.leader_id == result.member_id and len(result.members) == 1
    assert result.protocol_name == "range"


def test_initial_delay_extends_while_members_arrive_up_to_rebalance_timeout() -> None:
    h = Harness()
    a = h.join_new()
    h.sched.advance(250)
    b = h.join_new()  # extends the delay by another 300 ms
    h.sched.advance(100)
    assert a == [] and b == []
    h.sched.advance(300)
    assert a[0].error == E.NONE and b[0].error == E.NONE
    assert a[0].generation_id == b[0].generation_id == 1
    leader = a[0] if a[0].members else b[0]
    assert {m.member_id for m in leader.members} == {a[0].member_id, b[0].member_id}


def test_sync_hands_each_member_its_assignment() -> None:
    h = Harness()
    results = h.stable_group(3)
    group = h.gc.group("g")
    assert group is not None and group.generation_id == 1
    for i, r in enumerate(results):
        (s,) = h.sync("g", r.member_id, r.generation_id)
        assert s.assignment == encode_assignment({"t": [i]})
    # the group record was written with the assignments
    records = h.log.partitions[partition_for("g", 4)]
    value = parse_group_value(records[-1][1])  # type: ignore[arg-type]
    assert value.generation == 1 and value.protocol == "range" and len(value.members) == 3


def test_follower_sync_waits_for_leader() -> None:
    h = Harness()
    a, b = h.join_new(), h.join_new()
    h.sched.advance(600)
    leader, follower = (a[0], b[0]) if a[0].members else (b[0], a[0])
    pending = h.sync("g", follower.member_id, follower.generation_id)
    assert pending == []
    h.sync("g", leader.member_id, leader.generation_id, {follower.member_id: b"F"})
    assert pending[0].error == E.NONE and pending[0].assignment == b"F"


def test_session_timeout_evicts_member_and_rebalances() -> None:
    h = Harness()
    a, b = h.stable_group(2)
    # only a keeps heartbeating
    for _ in range(4):
        h.sched.advance(400)
        assert h.heartbeat("g", a.member_id, 1) in (E.NONE, E.REBALANCE_IN_PROGRESS)
    group = h.gc.group("g")
    assert group is not None and not group.has(b.member_id)
    assert group.state == GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", a.member_id, 1) == E.REBALANCE_IN_PROGRESS
    rejoin = h.join("g", a.member_id)
    assert rejoin[0].error == E.NONE and rejoin[0].generation_id == 2
    assert [m.member_id for m in rejoin[0].members] == [a.member_id]


def test_heartbeats_move_the_deadline_without_scheduling_timers() -> None:
    h = Harness()
    a, b = h.stable_group(2)
    before = h.sched.scheduled
    for _ in range(20):
        h.sched.advance(100)
        assert h.heartbeat("g", a.member_id, 1) == E.NONE
        assert h.heartbeat("g", b.member_id, 1) == E.NONE
    # 40 heartbeats over two session timeouts: each member's timer re-armed itself about twice
    # (plus the offset expiration checks), not once per heartbeat
    assert h.sched.scheduled - before <= 8
    # the session still ends one session timeout after the last heartbeat
    for _ in range(9):
        h.sched.advance(100)
        h.heartbeat("g", a.member_id, 1)
    group = h.gc.group("g")
    assert group is not None and group.has(b.member_id)
    h.sched.advance(100)
    assert not group.has(b.member_id)


def test_cancelled_timers_that_fire_anyway_do_nothing() -> None:
    h = Harness(ignore_cancel=True)
    a, b = h.stable_group(2)
    for _ in range(10):
        h.sched.advance(400)
        assert h.heartbeat("g", a.member_id, 1) == E.NONE
        assert h.heartbeat("g", b.member_id, 1) == E.NONE
    group = h.gc.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.generation_id == 1
    # b stops: its session timer (the current one) still ends it
    for _ in range(4):
        h.sched.advance(400)
        h.heartbeat("g", a.member_id, 1)
    assert set(group.members) == {a.member_id}
    assert group.state == GroupState.PREPARING_REBALANCE


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    h = Harness()
    a, b = h.stable_group(2)
    # a new member arrives: both must rejoin within the rebalance timeout (2 s)
    c = h.join_new()
    assert c == []
    ra = h.join("g", a.member_id)
    h.heartbeat("g", b.member_id, 1)
    # b is not waiting in the rebalance and sends no heartbeat: its session ends it, and the
    # rebalance completes without it
    h.sched.advance(1000)
    assert ra[0].error == E.NONE and c[0].error == E.NONE
    group = h.gc.group("g")
    assert group is not None and set(group.members) == {a.member_id, c[0].member_id}
    assert h.heartbeat("g", b.member_id, 1) == E.UNKNOWN_MEMBER_ID


def test_leave_group_triggers_rebalance_and_errors() -> None:
    h = Harness()
    a, b = h.stable_group(2)
    err, results = h.gc.leave_group(group_id="g", members=[(b.member_id, None), ("nobody", None)])
    assert err == E.NONE
    assert [r[2] for r in results] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert h.gc.group("g").state == GroupState.PREPARING_REBALANCE  # type: ignore[union-attr]
    rejoin = h.join("g", a.member_id)
    assert rejoin[0].generation_id == 2
    err, results = h.gc.leave_group(group_id="unknown-group", members=[("x", None)])
    assert results[0][2] == E.UNKNOWN_MEMBER_ID


def test_last_member_leaving_empties_group_and_stores_it() -> None:
    h = Harness()
    (a,) = h.stable_group(1)
    h.gc.leave_group(group_id="g", members=[(a.member_id, None)])
    group = h.gc.group("g")
    assert group is not None and group.state == GroupState.EMPTY and group.generation_id == 2
    value = parse_group_value(h.log.partitions[partition_for("g", 4)][-1][1])  # type: ignore[arg-type]
    assert value.members == () and value.generation == 2


def test_errors_for_stale_requests() -> None:
    h = Harness()
    (a,) = h.stable_group(1)
    assert h.heartbeat("g", a.member_id, 7) == E.ILLEGAL_GENERATION
    assert h.heartbeat("g", "ghost", 1) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("nope", "ghost", 1) == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", a.member_id, 5)[0].error == E.ILLEGAL_GENERATION
    assert h.sync("g", "ghost", 1)[0].error == E.UNKNOWN_MEMBER_ID
    assert h.join("g", "ghost")[0].error == E.UNKNOWN_MEMBER_ID
    assert h.join("", "")[0].error == E.INVALID_GROUP_ID
    assert h.join("g", session_ms=50)[0].error == E.INVALID_SESSION_TIMEOUT
    bad = h.join("g", protocols=[("roundrobin", b"")])
    assert bad[0].error == E.INCONSISTENT_GROUP_PROTOCOL


def test_not_coordinator_and_loading() -> None:
    h = Harness(load=False)
    assert h.join()[0].error == E.NOT_COORDINATOR
    p = partition_for("g", 4)
    load_id = h.gc.begin_loading(p)
    assert h.join()[0].error == E.COORDINATOR_LOAD_IN_PROGRESS
    err, _ = h.gc.fetch_offsets(group_id="g", partitions=[("t", 0)])
    assert err == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.heartbeat("g", "m", 1) == E.NONE  # answered blindly while loading
    assert h.sync("g", "m", 1)[0].error == E.REBALANCE_IN_PROGRESS
    assert h.gc.complete_loading(p, load_id, [])
    assert h.join()[0].error == E.MEMBER_ID_REQUIRED
    h.gc.unload(p)
    assert h.join()[0].error == E.NOT_COORDINATOR


def test_stale_load_is_ignored() -> None:
    h = Harness(load=False)
    first = h.gc.begin_loading(0)
    second = h.gc.begin_loading(0)
    assert not h.gc.complete_loading(0, first, [])
    assert h.gc.complete_loading(0, second, [])


def test_static_member_rejoin_keeps_assignment_and_fences_old_id() -> None:
    h = Harness()
    w = h.join("g", instance="i1")
    h.sched.advance(300)
    (old,) = w
    assert old.error == E.NONE
    assert h.sync("g", old.member_id, 1, {old.member_id: b"A"}, instance="i1")[0].error == E.NONE
    # the same instance restarts: new member id, same generation, no rebalance
    (again,) = h.join("g", instance="i1")
    assert again.error == E.NONE and again.member_id != old.member_id
    assert again.generation_id == 1 and again.leader_id == old.member_id and again.members == []
    group = h.gc.group("g")
    assert group is not None and group.state == GroupState.STABLE
    assert h.sync("g", again.member_id, 1, instance="i1")[0].assignment == b"A"
    # the old id is fenced
    assert (
        h.gc.heartbeat(
            group_id="g", member_id=old.member_id, group_instance_id="i1", generation_id=1
        )
        == E.FENCED_INSTANCE_ID
    )
    # with JoinGroup v9 the leader learns it leads but skips the assignment
    (v9,) = h.join("g", instance="i1", skip=True)
    assert v9.skip_assignment and v9.leader_id == v9.member_id and len(v9.members) == 1


def test_an_instance_id_no_static_member_holds_is_an_unknown_member() -> None:
    """Kafka's validateCurrentMember: a request naming a group.instance.id must come from the
    static member holding it, even when its member id is a current member's (Kafka 3.9 answers
    UNKNOWN_MEMBER_ID; the differential corpus's edge/static-membership compares)."""
    h = Harness()
    (a,) = h.stable_group(1)
    assert (
        h.gc.heartbeat(group_id="g", member_id=a.member_id, group_instance_id="i9", generation_id=1)
        == E.UNKNOWN_MEMBER_ID
    )
    offsets = {("t", 0): OffsetAndMetadata(7, -1, "", h.sched.now)}
    assert h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id="i9",
        generation_id=1,
        offsets=offsets,
    ) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert h.sync("g", a.member_id, 1, instance="i9")[0].error == E.UNKNOWN_MEMBER_ID
    # a LeaveGroup naming the member under another instance id leaves it in the group
    error, results = h.gc.leave_group(group_id="g", members=[(a.member_id, "i9")])
    assert error == E.NONE and results == [(a.member_id, "i9", E.UNKNOWN_MEMBER_ID)]
    assert a.member_id in h.gc.group("g").members  # type: ignore[union-attr]


def test_a_commit_with_no_generation_to_an_empty_group_is_taken() -> None:
    """Kafka's validateOffsetCommit takes a commit with generation -1 to an empty group
    whatever member id it names (a consumer that left still commits its last offsets)."""
    h = Harness()
    (a,) = h.stable_group(1)
    h.gc.leave_group(group_id="g", members=[(a.member_id, None)])
    assert h.gc.group("g").state == GroupState.EMPTY  # type: ignore[union-attr]
    offsets = {("t", 0): OffsetAndMetadata(9, -1, "", h.sched.now)}
    assert h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=-1,
        offsets=offsets,
    ) == {("t", 0): E.NONE}
    assert h.gc.fetch_offsets(group_id="g", partitions=[("t", 0)])[1][("t", 0)].offset == 9  # type: ignore[union-attr]


def test_static_member_is_not_removed_by_rebalance_timeout() -> None:
    h = Harness()
    a = h.join("g", instance="s1")
    b = h.join_new()
    h.sched.advance(600)
    assert a[0].error == b[0].error == E.NONE
    leader = a[0] if a[0].members else b[0]
    h.sync("g", leader.member_id, 1, {a[0].member_id: b"A", b[0].member_id: b"B"})
    other = b[0] if leader is a[0] else a[0]
    h.sync("g", other.member_id, 1)
    # b leaves: rebalance; the static member does not rejoin in time but stays
    h.gc.leave_group(group_id="g", members=[(b[0].member_id, None)])
    for _ in range(5):
        h.sched.advance(500)
        h.gc.heartbeat(
            group_id="g", member_id=a[0].member_id, group_instance_id="s1", generation_id=1
        )
    group = h.gc.group("g")
    assert group is not None and a[0].member_id in group.members


def test_offsets_commit_fetch_and_member_checks() -> None:
    h = Harness()
    (a,) = h.stable_group(1)
    now = h.sched.now
    offsets = {("t", 0): OffsetAndMetadata(42, 3, "meta", now)}
    assert h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=1,
        offsets=offsets,
    ) == {("t", 0): E.NONE}
    err, got = h.gc.fetch_offsets(group_id="g", partitions=[("t", 0), ("t", 1)])
    assert err == E.NONE and got[("t", 0)] == offsets[("t", 0)] and got[("t", 1)] is None
    assert h.gc.fetch_offsets(group_id="g", partitions=None)[1] == offsets
    bad = h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=9,
        offsets=offsets,
    )
    assert bad == {("t", 0): E.ILLEGAL_GENERATION}
    simple = h.commit_offsets(
        group_id="g", member_id="", group_instance_id=None, generation_id=-1, offsets=offsets
    )
    assert simple == {("t", 0): E.UNKNOWN_MEMBER_ID}
    big = {("t", 1): OffsetAndMetadata(1, -1, "x" * 5000, now)}
    assert h.commit_offsets(
        group_id="g", member_id=a.member_id, group_instance_id=None, generation_id=1, offsets=big
    ) == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    key, value = h.log.partitions[partition_for("g", 4)][-1]
    assert parse_key(key).topic == "t"  # type: ignore[union-attr]
    assert parse_offset_value(value).offset == 42  # type: ignore[arg-type]


def test_simple_commits_and_storage_errors() -> None:
    h = Harness()
    offsets = {("t", 0): OffsetAndMetadata(5, -1, "", h.sched.now)}
    assert h.commit_offsets(
        group_id="", member_id="", group_instance_id=None, generation_id=-1, offsets=offsets
    ) == {("t", 0): E.NONE}
    assert h.commit_offsets(
        group_id="new", member_id="m", group_instance_id=None, generation_id=3, offsets=offsets
    ) == {("t", 0): E.ILLEGAL_GENERATION}
    h.log.fail_with = E.NOT_LEADER_OR_FOLLOWER
    assert h.commit_offsets(
        group_id="s", member_id="", group_instance_id=None, generation_id=-1, offsets=offsets
    ) == {("t", 0): E.NOT_COORDINATOR}
    h.log.fail_with = E.MESSAGE_TOO_LARGE
    assert h.commit_offsets(
        group_id="s", member_id="", group_instance_id=None, generation_id=-1, offsets=offsets
    ) == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}


def test_reload_from_log_restores_groups_members_and_offsets() -> None:
    h = Harness()
    a, b = h.stable_group(2)
    now = h.sched.now
    h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=1,
        offsets={
            ("t", 0): OffsetAndMetadata(7, -1, "m", now),
            ("t", 1): OffsetAndMetadata(9, -1, "", now),
        },
    )
    h.commit_offsets(
        group_id="simple",
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={("u", 0): OffsetAndMetadata(1, -1, "", now)},
    )
    h.delete_offsets(group_id="simple", partitions=[("u", 0)])
    records = {p: list(r) for p, r in h.log.partitions.items()}

    h2 = Harness(load=False)
    for p in range(4):
        assert h2.gc.complete_loading(p, h2.gc.begin_loading(p), records.get(p, []))
    group = h2.gc.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.generation_id == 1
    assert set(group.members) == {a.member_id, b.member_id}
    offsets = h2.gc.committed_offsets("g")
    assert offsets[("t", 0)].offset == 7 and offsets[("t", 0)].metadata == "m"
    assert h2.gc.group("simple") is None
    # the members carry on with the same generation
    assert h2.heartbeat("g", a.member_id, 1) == E.NONE
    # and one that never comes back is evicted after its session timeout
    for _ in range(3):
        h2.sched.advance(500)
        h2.heartbeat("g", a.member_id, 1)
    assert not group.has(b.member_id)


def test_load_skips_a_truncated_offset_value() -> None:
    h = Harness(load=False)
    p = partition_for("g", 4)
    good = offset_commit_value(7, -1, "", 1)
    records = [
        (offset_commit_key("g", "t", 0), good),
        (offset_commit_key("g", "t", 1), offset_commit_value(9, -1, "meta", 1)[:-3]),
        (offset_commit_key("g", "t", 2), good),
    ]
    assert h.gc.complete_loading(p, h.gc.begin_loading(p), records)
    assert not h.gc.is_loading(p)
    err, found = h.gc.fetch_offsets(group_id="g", partitions=None)
    assert err == E.NONE and {tp: o.offset for tp, o in found.items() if o} == {
        ("t", 0): 7,
        ("t", 2): 7,
    }


def test_offsets_expire_after_retention_and_empty_group_goes_away() -> None:
    h = Harness()
    now = h.sched.now
    h.commit_offsets(
        group_id="s",
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={("t", 0): OffsetAndMetadata(1, -1, "", now)},
    )
    h.sched.advance(9_000)
    assert h.gc.group("s") is not None
    h.sched.advance(2_000)
    assert h.gc.group("s") is None
    tombstones = [r for r in h.log.partitions[partition_for("s", 4)] if r[1] is None]
    assert len(tombstones) == 2  # the offset and the group


def test_stable_consumer_group_keeps_offsets_of_subscribed_topics() -> None:
    h = Harness()
    (a,) = h.stable_group(1)
    now = h.sched.now
    h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=1,
        offsets={
            ("t", 0): OffsetAndMetadata(1, -1, "", now),
            ("old", 0): OffsetAndMetadata(1, -1, "", now),
        },
    )
    for _ in range(30):
        h.sched.advance(400)
        h.heartbeat("g", a.member_id, 1)
    group = h.gc.group("g")
    assert group is not None and set(h.gc.committed_offsets("g")) == {("t", 0)}


def test_delete_groups_and_offset_delete() -> None:
    h = Harness()
    (a,) = h.stable_group(1)
    now = h.sched.now
    h.commit_offsets(
        group_id="g",
        member_id=a.member_id,
        group_instance_id=None,
        generation_id=1,
        offsets={
            ("t", 0): OffsetAndMetadata(1, -1, "", now),
            ("x", 0): OffsetAndMetadata(1, -1, "", now),
        },
    )
    err, per = h.delete_offsets(group_id="g", partitions=[("t", 0), ("x", 0)])
    assert err == E.NONE and per == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("x", 0): E.NONE}
    assert h.delete_groups(["g", "nope"]) == {
        "g": E.NON_EMPTY_GROUP,
        "nope": E.GROUP_ID_NOT_FOUND,
    }
    h.gc.leave_group(group_id="g", members=[(a.member_id, None)])
    assert h.delete_groups(["g"]) == {"g": E.NONE}
    assert h.gc.group("g") is None
    assert h.delete_offsets(group_id="g", partitions=[("t", 0)])[0] == E.GROUP_ID_NOT_FOUND


def test_list_and_describe() -> None:
    h = Harness()
    h.stable_group(1)
    h.join_new("other")
    err, groups = h.gc.list_groups()
    assert err == E.NONE and {(g.group_id, g.state) for g in groups} == {
        ("g", "Stable"),
        ("other", "PreparingRebalance"),
    }
    assert [g.group_id for g in h.gc.list_groups(["stable"])[1]] == ["g"]
    err, summary = h.gc.describe_group("g")
    assert err == E.NONE and summary is not None and summary.protocol == "range"
    assert summary.members[0].assignment == encode_assignment({"t": [0]})
    assert h.gc.describe_group("nope") == (E.NONE, DEAD_GROUP)


def test_pending_member_and_new_member_expiry() -> None:
    h = Harness()
    first = h.join()
    assert first[0].error == E.MEMBER_ID_REQUIRED
    h.sched.advance(1000)  # never came back: gone after its session timeout
    group = h.gc.group("g")
    assert group is not None and not group.pending_members
    late = h.join("g", first[0].member_id)
    assert late[0].error == E.UNKNOWN_MEMBER_ID


def test_new_member_join_times_out_with_unknown_member_id() -> None:
    # a group stuck rebalancing (a static member never rejoins) answers a new member after 5 min
    h = Harness(
        GroupConfig(num_partitions=4, min_session_timeout_ms=100, initial_rebalance_delay_ms=0)
    )
    s = h.join("g", instance="s", rebalance_ms=10 * 60 * 1000, session_ms=60_000)
    h.sched.advance(0)
    assert s[0].error == E.NONE
    h.sync("g", s[0].member_id, 1, {s[0].member_id: b""}, instance="s")
    pending = h.join_new("g", rebalance_ms=10 * 60 * 1000, session_ms=60_000)
    for _ in range(int(NEW_MEMBER_JOIN_TIMEOUT_MS / 30_000) + 1):
        h.sched.advance(30_000)
        h.gc.heartbeat(
            group_id="g", member_id=s[0].member_id, group_instance_id="s", generation_id=1
        )
    assert pending and pending[0].error == E.UNKNOWN_MEMBER_ID


def test_shutdown_answers_waiting_members_and_cancels_timers() -> None:
    h = Harness()
    waiting = h.join_new()
    h.gc.shutdown()
    assert waiting[0].error == E.COORDINATOR_NOT_AVAILABLE
    assert h.sched.pending() == 0


@pytest.mark.parametrize("n", [2, 5])
def test_many_members_one_generation(n: int) -> None:
    h = Harness()
    results = h.stable_group(n)
    assert {r.generation_id for r in results} == {1}
    assert sum(1 for r in results if r.members) == 1


def test_static_rejoin_that_cannot_be_stored_keeps_the_old_member() -> None:
    h = Harness()
    waiting = h.join("g", instance="i1")
    h.sched.advance(300)
    (old,) = waiting
    h.sync("g", old.member_id, 1, {old.member_id: b"A"}, instance="i1")
    h.log.fail_with = E.NOT_LEADER_OR_FOLLOWER
    answers = h.join("g", instance="i1")
    assert [a.error for a in answers] == [E.NOT_COORDINATOR]
    group = h.gc.group("g")
    assert group is not None and set(group.members) == {old.member_id}
    assert group.static_members == {"i1": old.member_id}
    assert group.num_members_awaiting_join == 0


def test_coordinates_only_partitions_taken_over():
    """FindCoordinator names this broker only once the coordinator has taken the partition
    (broker.coordinators.internal_topic answers COORDINATOR_NOT_AVAILABLE before that)."""
    h = Harness(load=False)
    assert not h.gc.coordinates(1)
    load_id = h.gc.begin_loading(1)
    assert h.gc.coordinates(1) and h.gc.is_loading(1)
    h.gc.complete_loading(1, load_id, [])
    assert h.gc.coordinates(1) and not h.gc.is_loading(1)
    h.gc.unload(1)
    assert not h.gc.coordinates(1)


def test_a_protocol_named_twice_counts_once() -> None:
    """Found by the fuzz test: a static member naming one protocol twice made the protocol
    vote fail (the timer raised, the group never completed its join)."""
    twice = [("range", encode_subscription(["t"])), ("range", encode_subscription(["t"]))]
    h = Harness()
    w = h.join("g", instance="i1", protocols=twice)
    h.sched.advance(300)
    (result,) = w
    assert result.error == E.NONE and result.protocol_name == "range"
    # a second member with the one protocol joins the same group
    w2 = h.join_new("g", protocols=[("range", encode_subscription(["t"]))])
    assert w2 == [] or w2[0].error == E.NONE
