"""KIP-848 consumer groups as a state machine: the GroupCoordinator with a fake clock and
scheduler, an in-memory log, a metadata view the test changes, and simulated members that do
what the protocol asks of clients (give up what they are told to revoke, report what they own)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from coordination.group.assignors import GroupSpec, MemberSpec, RangeAssignor, UniformAssignor
from coordination.group.config import GroupConfig, JoinRequest
from coordination.group.consumer import HeartbeatRequest, HeartbeatResult
from coordination.group.consumer_group import ConsumerGroupState, MemberState
from coordination.group.consumer_protocol import encode_assignment, encode_subscription
from coordination.group.consumer_records import (
    ClassicMetadata,
    ConsumerRecord,
    CurrentAssignment,
    CurrentAssignmentKey,
    GroupEpochKey,
    MemberSubscription,
    MemberSubscriptionKey,
    RegexKey,
    ResolvedRegex,
    SubscriptionMetadataKey,
    TargetEpochKey,
    TargetMemberKey,
    TopicInfo,
    encode,
    parse,
)
from coordination.group.coordinator import GroupCoordinator
from coordination.group.metadata import JoinResult, OffsetAndMetadata, SyncResult
from coordination.metadata.view import ClusterView, PartitionState, TopicMetadata
from protocol.error_codes import ErrorCode
from tests.unit.coordination.test_group_coordinator import FakeScheduler, MemoryLog

E = ErrorCode

CONFIG = GroupConfig(
    num_partitions=1,
    min_session_timeout_ms=100,
    max_session_timeout_ms=60_000,
    initial_rebalance_delay_ms=0,
    consumer_session_timeout_ms=45_000,
    consumer_heartbeat_interval_ms=5_000,
)


def topic(name: str, partitions: int, topic_id: uuid.UUID | None = None) -> TopicMetadata:
    return TopicMetadata(
        name,
        topic_id or uuid.uuid4(),
        tuple(PartitionState(p, 0, 0, (0,), (0,)) for p in range(partitions)),
    )


class Cluster:
    def __init__(self) -> None:
        self.view = ClusterView(cluster_id="c", controller_id=0, brokers={}, topics={})

    def set(self, *topics: TopicMetadata) -> tuple[ClusterView, ClusterView]:
        old = self.view
        self.view = ClusterView(
            cluster_id="c", controller_id=0, brokers={}, topics={t.name: t for t in topics}
        )
        return old, self.view


class Harness:
    def __init__(self, config: GroupConfig = CONFIG, *, log: MemoryLog | None = None) -> None:
        self.sched = FakeScheduler()
        self.log = log or MemoryLog()
        self.cluster = Cluster()
        self.gc = GroupCoordinator(
            config, self.sched, self.log, clock=self.sched.clock, cluster=lambda: self.cluster.view
        )
        self.gc.startup()

    def load(self) -> None:
        records = list(self.log.partitions.get(0, []))
        self.gc.complete_loading(0, self.gc.begin_loading(0), records)

    def topics(self, *topics: TopicMetadata) -> None:
        old, new = self.cluster.set(*topics)
        self.gc.on_metadata_change(old, new)

    def heartbeat(self, **kw: object) -> HeartbeatResult:
        args: dict[str, object] = {
            "group_id": "g",
            "member_id": "",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": 30_000,
            "subscribed_topic_names": None,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "owned": {},
            "client_id": "client",
            "client_host": "/127.0.0.1",
            "api_version": 1,
        }
        args.update(kw)
        out: list[HeartbeatResult] = []
        self.gc.consumer_group_heartbeat(HeartbeatRequest(**args), out.append)  # type: ignore[arg-type]
        assert len(out) == 1
        return out[0]

    def group(self, group_id: str = "g"):  # type: ignore[no-untyped-def]
        return self.gc.runtime.with_shard(
            0, lambda shard: shard.consumer_groups.get(group_id), lambda e: None
        )


@dataclass
class Client:
    """A member doing what a KIP-848 client does."""

    h: Harness
    member_id: str
    topics: list[str] | None = None
    regex: str | None = None
    instance_id: str | None = None
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    joined: bool = False

    def beat(self) -> HeartbeatResult:
        if not self.joined:
            r = self.h.heartbeat(
                member_id=self.member_id,
                member_epoch=0,
                subscribed_topic_names=self.topics,
                subscribed_topic_regex=self.regex,
                instance_id=self.instance_id,
                owned={},
            )
        else:
            r = self.h.heartbeat(
                member_id=self.member_id,
                member_epoch=self.epoch,
                instance_id=self.instance_id,
                rebalance_timeout_ms=-1,
                owned=dict(self.owned),
            )
        if r.error == E.NONE:
            self.joined = True
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = {t: p for t, p in r.assignment.items() if p}
        elif r.error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            self.owned = {}
            self.joined = False
            self.epoch = 0
        return r

    def leave(self, epoch: int = -1) -> HeartbeatResult:
        r = self.h.heartbeat(
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=-1,
            owned=None,
        )
        self.owned = {}
        self.joined = False
        return r

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, parts in self.owned.items() for p in parts}


def assert_no_two_owners(clients: list[Client]) -> None:
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for c in clients:
        for tp in c.partitions():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {c.member_id}"
            seen[tp] = c.member_id


def settle(h: Harness, clients: list[Client], rounds: int = 6) -> None:
    for _ in range(rounds):
        for c in clients:
            c.beat()
            assert_no_two_owners(clients)


# -- records and assignors --------------------------------------------------------------------


def test_records_round_trip_with_kafkas_key_types() -> None:
    t = uuid.uuid4()
    records = [
        ConsumerRecord(GroupEpochKey("g"), 5),
        ConsumerRecord(SubscriptionMetadataKey("g"), {"a": TopicInfo(t, "a", 3)}),
        ConsumerRecord(
            MemberSubscriptionKey("g", "m"),
            MemberSubscription(
                None,
                "r",
                "c",
                "/h",
                frozenset({"a"}),
                None,
                300,
                "range",
                ClassicMetadata(45_000, (("range", b"xx"),)),
            ),
        ),
        ConsumerRecord(TargetEpochKey("g"), 5),
        ConsumerRecord(TargetMemberKey("g", "m"), {t: frozenset({0, 2})}),
        ConsumerRecord(
            CurrentAssignmentKey("g", "m"),
            CurrentAssignment(5, 4, 1, {t: frozenset({0})}, {t: frozenset({1})}),
        ),
        ConsumerRecord(  # KIP-1251's assignment epochs, a tagged field
            CurrentAssignmentKey("g", "m"),
            CurrentAssignment(
                5,
                4,
                1,
                {t: frozenset({0, 2})},
                {t: frozenset({1})},
                {(t, 0): 3, (t, 2): 5, (t, 1): 2},
            ),
        ),
        ConsumerRecord(RegexKey("g", "a.*"), ResolvedRegex(frozenset({"a"}), 3, 1000)),
        ConsumerRecord(CurrentAssignmentKey("g", "m"), None),
    ]
    for record in records:
        key, value = encode(record)
        assert parse(key, value) == record
    # the key's first int16 is Kafka's record type
    assert [int.from_bytes(encode(r)[0][:2], "big") for r in records] == [
        3,
        4,
        5,
        6,
        7,
        8,
        8,
        16,
        8,
    ]
    # a record written before them (no tag) has none: the member's epoch stands in
    bare = encode(records[5])
    assert parse(*bare).value.assignment_epochs == {}  # type: ignore[union-attr]
    assert len(encode(records[6])[1] or b"") > len(bare[1] or b"")


def _spec(members: dict[str, tuple[set[uuid.UUID], dict[uuid.UUID, frozenset[int]]]]) -> dict:
    return {
        m: MemberSpec(m, None, None, frozenset(topics), assignment)
        for m, (topics, assignment) in members.items()
    }


def test_uniform_assignor_is_balanced_and_sticky() -> None:
    t = uuid.uuid4()
    five = _spec({f"m{i}": ({t}, {}) for i in range(5)})
    first = UniformAssignor().assign(GroupSpec(five, {t: 12}, True))
    sizes = sorted(len(a.get(t, ())) for a in first.values())
    assert sizes == [2, 2, 2, 3, 3]
    assert set().union(*(a[t] for a in first.values())) == set(range(12))
    # m4 goes: only its partitions move
    four = _spec({m: ({t}, first[m]) for m in ("m0", "m1", "m2", "m3")})
    second = UniformAssignor().assign(GroupSpec(four, {t: 12}, True))
    for m in four:
        assert first[m][t] <= second[m][t]
    assert sorted(len(a[t]) for a in second.values()) == [3, 3, 3, 3]


def test_uniform_assignor_heterogeneous_subscriptions() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    spec = _spec({"a": ({t1, t2}, {}), "b": ({t1}, {}), "c": ({t2}, {})})
    out = UniformAssignor().assign(GroupSpec(spec, {t1: 6, t2: 3}, False))
    assert not out["b"].get(t2) and not out["c"].get(t1)
    assert sorted(sum(len(p) for p in a.values()) for a in out.values()) == [3, 3, 3]
    owners = [p for a in out.values() for t, ps in a.items() for p in [(t, x) for x in ps]]
    assert len(owners) == len(set(owners)) == 9


def test_range_assignor_gives_contiguous_ranges_static_members_first() -> None:
    t = uuid.uuid4()
    spec = {
        "b": MemberSpec("b", None, None, frozenset({t}), {}),
        "a": MemberSpec("a", None, None, frozenset({t}), {}),
        "z": MemberSpec("z", "instance-1", None, frozenset({t}), {}),
    }
    out = RangeAssignor().assign(GroupSpec(spec, {t: 7}, True))
    assert out["z"][t] == frozenset({0, 1, 2})
    assert out["a"][t] == frozenset({3, 4})
    assert out["b"][t] == frozenset({5, 6})


# -- the heartbeat protocol ---------------------------------------------------------------------


def test_first_member_gets_everything_and_epochs_move() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    r = a.beat()
    assert r.error == E.NONE and r.member_id == "a" and r.member_epoch == 1
    assert r.heartbeat_interval_ms == 5_000
    assert a.owned == {t.topic_id: frozenset(range(4))}
    group = h.group()
    assert (group.group_epoch, group.target_assignment_epoch) == (1, 1)
    assert group.state == ConsumerGroupState.STABLE
    # a heartbeat with nothing new writes nothing and sends no assignment
    writes = len(h.log.partitions[0])
    r = a.beat()
    assert r.assignment is None and len(h.log.partitions[0]) == writes


def test_revocation_before_reassignment() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    a, b = Client(h, "a", topics=["t"]), Client(h, "b", topics=["t"])
    a.beat()
    r = b.beat()
    # b's target is half, but a still owns it: b gets nothing yet
    assert r.error == E.NONE and r.member_epoch == 2 and b.owned == {}
    assert h.group().members["b"].state == MemberState.UNRELEASED_PARTITIONS
    r = a.beat()  # a is asked to revoke two partitions, its epoch stays
    assert r.member_epoch == 1 and len(a.partitions()) == 2
    assert h.group().members["a"].state == MemberState.UNREVOKED_PARTITIONS
    assert_no_two_owners([a, b])
    b.beat()
    assert b.owned == {}, "b must not get partitions a has not acknowledged giving up"
    r = a.beat()  # a reports it owns only its two: it moves to epoch 2
    assert r.member_epoch == 2
    b.beat()
    assert len(b.partitions()) == 2
    assert_no_two_owners([a, b])
    assert h.group().state == ConsumerGroupState.STABLE


@pytest.mark.parametrize("seed", range(8))
def test_random_joins_leaves_and_deaths_never_give_a_partition_two_owners(seed: int) -> None:
    rnd = random.Random(seed)
    h = Harness()
    h.load()
    t1, t2 = topic("t1", 7), topic("t2", 5)
    h.topics(t1, t2)
    clients: list[Client] = []
    dead: list[Client] = []
    for step in range(120):
        action = rnd.random()
        if action < 0.15 and len(clients) < 6:
            clients.append(Client(h, f"m{step}", topics=rnd.choice([["t1", "t2"], ["t1"]])))
        elif action < 0.22 and clients:
            rnd.choice(clients).leave()
            clients = [c for c in clients if c.joined]
        elif action < 0.27 and clients:
            # a member dies: it stops heartbeating but still owns what it had until its
            # session expires
            victim = rnd.choice(clients)
            clients.remove(victim)
            dead.append(victim)
        elif action < 0.3:
            h.sched.advance(46_000)  # dead members' sessions expire
            for c in clients:
                c.joined and c.beat()
            dead.clear()
        for c in clients:
            c.beat()
        everyone = clients + list(dead)
        assert_no_two_owners(everyone)
    h.sched.advance(46_000)
    dead.clear()
    settle(h, clients, 10)
    group = h.group()
    if clients:
        assert group.state == ConsumerGroupState.STABLE
        owned = set().union(*(c.partitions() for c in clients))
        subscribed = set().union(*(c.topics or [] for c in clients))
        wanted = {
            (t.topic_id, p)
            for t in (t1, t2)
            if t.name in subscribed
            for p in range(len(t.partitions))
        }
        assert owned == wanted


def test_session_timeout_fences_a_member_and_its_partitions_move() -> None:
    h = Harness()
    h.load()
    t = topic("t", 6)
    h.topics(t)
    a, b = Client(h, "a", topics=["t"]), Client(h, "b", topics=["t"])
    settle(h, [a, b])
    assert len(a.partitions()) == 3
    for _ in range(10):  # b keeps heartbeating, a went silent
        h.sched.advance(5_000)
        b.beat()
    assert "a" not in h.group().members
    settle(h, [b])
    assert len(b.partitions()) == 6
    r = a.beat()
    assert r.error == E.UNKNOWN_MEMBER_ID


def test_a_groups_own_session_timeout_and_heartbeat_interval() -> None:
    """KIP-848's group configs (ClusterView.group_configs) over the broker's: a member of the
    group is told its interval and fenced after its session timeout; another group keeps the
    broker's."""
    from dataclasses import replace

    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    h.cluster.view = replace(
        h.cluster.view,
        group_configs={
            "g": {"consumer.session.timeout.ms": "12000", "consumer.heartbeat.interval.ms": "6000"}
        },
    )
    a = Client(h, "a", topics=["t"])
    assert a.beat().heartbeat_interval_ms == 6000
    r = h.heartbeat(group_id="other", member_id="o", subscribed_topic_names=["t"])
    assert r.error == E.NONE and r.heartbeat_interval_ms == 5000
    h.sched.advance(11_000)
    assert "a" in h.group().members
    h.sched.advance(2_000)  # past the group's 12 s, long before the broker's 45 s
    assert "a" not in h.group().members
    assert "o" in h.group("other").members


def test_fenced_epoch_and_rejoin_with_epoch_zero() -> None:
    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    a.beat()
    r = h.heartbeat(member_id="a", member_epoch=7, rebalance_timeout_ms=-1, owned={})
    assert r.error == E.FENCED_MEMBER_EPOCH
    # KAFKA-19233: the fenced member rejoins with epoch 0 and gets its assignment back
    r = h.heartbeat(member_id="a", member_epoch=0, subscribed_topic_names=["t"], owned={})
    assert r.error == E.NONE and r.assignment == {t.topic_id: frozenset({0, 1})}


def test_invalid_requests() -> None:
    h = Harness()
    h.load()
    assert h.heartbeat(member_id="", member_epoch=0).error == E.INVALID_REQUEST  # v1
    r = h.heartbeat(member_id="x", subscribed_topic_names=["t"], rebalance_timeout_ms=-1)
    assert r.error == E.INVALID_REQUEST and "RebalanceTimeoutMs" in (r.message or "")
    r = h.heartbeat(member_id="x", subscribed_topic_names=["t"], server_assignor="sticky")
    assert r.error == E.UNSUPPORTED_ASSIGNOR
    r = h.heartbeat(member_id="x", subscribed_topic_regex="a(b")
    assert r.error == E.INVALID_REGULAR_EXPRESSION
    r = h.heartbeat(member_id="x", member_epoch=3, rebalance_timeout_ms=-1)
    assert r.error == E.GROUP_ID_NOT_FOUND
    # Kafka checks the request before it looks the group up: INVALID_REQUEST, not
    # INVALID_GROUP_ID (Kafka 4.x answers so; the differential corpus compares)
    r = h.heartbeat(group_id="", member_id="x", subscribed_topic_names=["t"])
    assert r.error == E.INVALID_REQUEST and "GroupId" in (r.message or "")
    # v0: the coordinator makes the member id
    r = h.heartbeat(member_id="", subscribed_topic_names=["t"], api_version=0)
    assert r.error == E.NONE and len(r.member_id or "") == 22


def test_static_member_leaves_temporarily_and_comes_back_with_its_partitions() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    a = Client(h, "a1", topics=["t"], instance_id="i-a")
    b = Client(h, "b", topics=["t"])
    settle(h, [a, b])
    kept = dict(a.owned)
    r = a.leave(epoch=-2)
    assert r.error == E.NONE and r.member_epoch == -2
    settle(h, [b])
    assert len(b.partitions()) == 2, "a static member's partitions wait for it"
    # another instance cannot take the instance id while it is held
    r = h.heartbeat(member_id="other", instance_id="i-b", subscribed_topic_names=["t"])
    assert r.error == E.NONE
    back = Client(h, "a2", topics=["t"], instance_id="i-a")
    r = back.beat()
    assert r.error == E.NONE and back.owned == kept
    assert "a1" not in h.group().members
    r = h.heartbeat(member_id="a3", instance_id="i-a", subscribed_topic_names=["t"])
    assert r.error == E.UNRELEASED_INSTANCE_ID


def test_regex_subscription_picks_up_topics_created_later() -> None:
    h = Harness()
    h.load()
    h.topics(topic("orders-1", 2), topic("other", 2))
    a = Client(h, "a", regex="orders-.*")
    a.beat()
    assert len(a.partitions()) == 2
    h.topics(*h.cluster.view.topics.values(), topic("orders-2", 3))
    h.sched.advance(11_000)  # regexes are resolved again at most every 10 s
    settle(h, [a], 3)
    assert len(a.partitions()) == 5
    described = h.gc.consumer_group_describe("g")
    assert described.members[0].subscribed_topic_regex == "orders-.*"


def test_partitions_added_and_topic_deleted_are_followed() -> None:
    h = Harness()
    h.load()
    t = topic("t", 2)
    u = topic("u", 2)
    h.topics(t, u)
    a = Client(h, "a", topics=["t", "u"])
    a.beat()
    h.topics(topic("t", 5, t.topic_id), u)
    settle(h, [a], 2)
    assert len(a.partitions()) == 7
    h.topics(topic("t", 5, t.topic_id))
    settle(h, [a], 3)
    assert a.partitions() == {(t.topic_id, p) for p in range(5)}


def test_group_survives_a_reload_from_its_records() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    a, b = Client(h, "a", topics=["t"]), Client(h, "b", topics=["t"], instance_id="i")
    settle(h, [a, b])
    before = h.group()
    snapshot = (
        before.group_epoch,
        before.target_assignment_epoch,
        {m: (x.member_epoch, dict(x.assigned), x.instance_id) for m, x in before.members.items()},
        {m: dict(p) for m, p in before.target_assignment.items()},
    )
    moved = Harness(log=h.log)
    moved.cluster.view = h.cluster.view
    moved.load()
    after = moved.group()
    assert (
        after.group_epoch,
        after.target_assignment_epoch,
        {m: (x.member_epoch, dict(x.assigned), x.instance_id) for m, x in after.members.items()},
        {m: dict(p) for m, p in after.target_assignment.items()},
    ) == snapshot
    a.h = b.h = moved
    r = a.beat()
    assert r.error == E.NONE and r.member_epoch == a.epoch


def test_a_commit_with_an_older_epoch_is_taken_for_partitions_held_since_then() -> None:
    """KIP-1251's assignment epochs: a member's heartbeat acknowledging a revocation moves it to
    a new epoch while a commit sent with the old one is under way; the commit is taken for the
    partitions the member has held since that epoch, refused (whole) otherwise."""
    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    settle(h, [a])
    first = a.epoch
    assert a.partitions() == {(t.topic_id, 0), (t.topic_id, 1)}
    b = Client(h, "b", topics=["t"])
    settle(h, [a, b])
    assert a.epoch > first and b.epoch > first
    ((_, kept),) = a.partitions()
    ((_, moved),) = b.partitions()

    def commit(member: Client, epoch: int, *partitions: int) -> set[ErrorCode]:
        out: list[dict[tuple[str, int], ErrorCode]] = []
        h.gc.commit_offsets(
            group_id="g",
            member_id=member.member_id,
            group_instance_id=None,
            generation_id=epoch,
            offsets={("t", p): OffsetAndMetadata(5, -1, "", 0) for p in partitions},
            callback=out.append,
            api_version=9,
        )
        return set(out[0].values())

    assert commit(a, first, kept) == {E.NONE}
    assert commit(a, first, moved) == {E.STALE_MEMBER_EPOCH}  # b's now
    assert commit(a, first, kept, moved) == {E.STALE_MEMBER_EPOCH}
    assert commit(a, a.epoch + 1, kept) == {E.STALE_MEMBER_EPOCH}  # newer than the member's
    assert commit(b, b.epoch, moved) == {E.NONE}
    assert commit(b, first, moved) == {E.STALE_MEMBER_EPOCH}  # b got it after that epoch


def test_offsets_of_consumer_groups_check_member_epochs() -> None:
    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    a.beat()
    oam = {("t", 0): OffsetAndMetadata(5, -1, "", 0)}

    def commit(**kw: object) -> ErrorCode:
        out: list[dict[tuple[str, int], ErrorCode]] = []
        args: dict[str, object] = {
            "group_id": "g",
            "member_id": "a",
            "group_instance_id": None,
            "generation_id": a.epoch,
            "api_version": 9,
        }
        args.update(kw)
        h.gc.commit_offsets(offsets=oam, callback=out.append, **args)  # type: ignore[arg-type]
        return out[0][("t", 0)]

    assert commit() == E.NONE
    assert commit(generation_id=a.epoch + 1) == E.STALE_MEMBER_EPOCH
    assert commit(member_id="nobody") == E.UNKNOWN_MEMBER_ID
    assert commit(generation_id=-1, member_id="") == E.UNKNOWN_MEMBER_ID  # not empty
    assert commit(api_version=8) == E.UNSUPPORTED_VERSION
    err, found = h.gc.fetch_offsets(
        group_id="g", partitions=[("t", 0)], member_id="a", member_epoch=a.epoch
    )
    assert err == E.NONE and found[("t", 0)].offset == 5  # type: ignore[union-attr]
    err, _ = h.gc.fetch_offsets(group_id="g", partitions=None, member_id="a", member_epoch=0)
    assert err == E.STALE_MEMBER_EPOCH
    err, _ = h.gc.fetch_offsets(group_id="g", partitions=None)  # an admin client
    assert err == E.NONE
    # a generation for a group that does not exist
    out: list[dict[tuple[str, int], ErrorCode]] = []
    h.gc.commit_offsets(
        group_id="nope",
        member_id="x",
        group_instance_id=None,
        generation_id=3,
        offsets=oam,
        callback=out.append,
        api_version=9,
    )
    assert out[0][("t", 0)] == E.GROUP_ID_NOT_FOUND


def test_list_describe_and_delete() -> None:
    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    a.beat()
    _, groups = h.gc.list_groups()
    assert [(g.group_id, g.group_type, g.state, g.protocol_type) for g in groups] == [
        ("g", "consumer", "Stable", "consumer")
    ]
    d = h.gc.consumer_group_describe("g")
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch, d.assignor) == (
        E.NONE,
        "Stable",
        1,
        1,
        "uniform",
    )
    assert d.members[0].assignment[0].partitions == (0, 1)
    assert d.members[0].member_type == 1
    assert h.gc.consumer_group_describe("nope").error == E.GROUP_ID_NOT_FOUND
    assert h.gc.describe_group("g")[1].state == "Dead"  # DescribeGroups: not a classic group
    deleted: list[dict[str, ErrorCode]] = []
    h.gc.delete_groups(["g"], deleted.append)
    assert deleted == [{"g": E.NON_EMPTY_GROUP}]
    a.leave()
    assert h.group().state == ConsumerGroupState.EMPTY
    h.gc.delete_groups(["g"], deleted.append)
    assert deleted[-1] == {"g": E.NONE}
    assert h.group() is None
    reloaded = Harness(log=h.log)
    reloaded.load()
    assert reloaded.group() is None


# -- classic members, conversions ---------------------------------------------------------------


def _join(h: Harness, member_id: str = "", topics: list[str] | None = None) -> JoinResult:
    out: list[JoinResult] = []
    h.gc.join_group(
        JoinRequest(
            group_id="g",
            member_id=member_id,
            group_instance_id=None,
            require_known_member_id=False,
            client_id="classic",
            client_host="/127.0.0.1",
            rebalance_timeout_ms=30_000,
            session_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=[("range", encode_subscription(topics or ["t"], version=1))],
        ),
        out.append,
    )
    h.sched.advance(1)  # a new classic group's delayed first rebalance
    assert len(out) == 1
    return out[0]


def _sync(h: Harness, member_id: str, generation: int) -> SyncResult:
    out: list[SyncResult] = []
    h.gc.sync_group(
        group_id="g",
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments={},
        callback=out.append,
    )
    return out[0]


def test_classic_member_joins_a_consumer_group() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    a = Client(h, "a", topics=["t"])
    a.beat()
    j = _join(h)
    assert j.error == E.NONE and j.protocol_name == "range" and j.leader_id == ""
    group = h.group()
    assert group.members[j.member_id].uses_classic_protocol
    # it must wait for a to revoke: its heartbeat asks it to rejoin until then
    s = _sync(h, j.member_id, j.generation_id)
    assert s.error == E.NONE
    settle(h, [a])
    hb = h.gc.heartbeat(
        group_id="g", member_id=j.member_id, group_instance_id=None, generation_id=j.generation_id
    )
    assert hb == E.REBALANCE_IN_PROGRESS
    j2 = _join(h, j.member_id)
    s = _sync(h, j.member_id, j2.generation_id)
    from coordination.group.consumer_protocol import assigned_partitions

    assert s.error == E.NONE and len(assigned_partitions(s.assignment)["t"]) == 2  # type: ignore[index]
    assert len(a.partitions()) == 2
    # the consumer protocol member leaves: the group goes back to the classic protocol
    a.leave()
    assert h.group() is None
    classic = h.gc.group("g")
    assert classic is not None and j.member_id in classic.members


def test_online_upgrade_of_a_classic_group() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    j = _join(h)
    assert j.error == E.NONE
    out: list[SyncResult] = []
    h.gc.sync_group(
        group_id="g",
        generation_id=j.generation_id,
        member_id=j.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments={j.member_id: encode_assignment({"t": [0, 1, 2, 3]})},
        callback=out.append,
    )
    assert out[0].error == E.NONE
    a = Client(h, "a", topics=["t"])
    r = a.beat()
    assert r.error == E.NONE
    group = h.group()
    assert group is not None and j.member_id in group.members
    assert group.members[j.member_id].assigned == {t.topic_id: frozenset(range(4))}
    assert h.gc.group("g") is None  # no classic group any more


def test_empty_classic_group_becomes_a_consumer_group_and_back() -> None:
    h = Harness()
    h.load()
    t = topic("t", 2)
    h.topics(t)
    out: list[dict[tuple[str, int], ErrorCode]] = []
    h.gc.commit_offsets(
        group_id="g",
        member_id="",
        group_instance_id=None,
        generation_id=-1,
        offsets={("t", 0): OffsetAndMetadata(3, -1, "", 0)},
        callback=out.append,
    )
    assert h.gc.group("g") is not None  # a "simple" classic group holding offsets
    a = Client(h, "a", topics=["t"])
    assert a.beat().error == E.NONE
    assert h.gc.group("g") is None and h.group() is not None
    assert h.gc.committed_offsets("g")[("t", 0)].offset == 3
    a.leave()
    j = _join(h)  # a classic member: the empty consumer group goes
    assert h.group() is None
    assert j.error in (E.NONE, E.MEMBER_ID_REQUIRED)


class DeferredLog(MemoryLog):
    """Appends at once, commits when the test says (a write waiting for the ISR)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Callable[[ErrorCode | None], None]] = []

    def append(self, partition, records, callback, **kw):  # type: ignore[no-untyped-def]
        self.partitions.setdefault(partition, []).extend(records)
        self.waiting.append(callback)

    def commit_all(self) -> None:
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            callback(None)


def test_operations_on_a_group_wait_for_its_write_and_are_refused_on_unload() -> None:
    log = DeferredLog()
    h = Harness(log=log)
    h.load()
    t = topic("t", 4)
    h.topics(t)
    answers: list[HeartbeatResult] = []

    def heartbeat(member: str) -> None:
        h.gc.consumer_group_heartbeat(
            HeartbeatRequest(
                group_id="g",
                member_id=member,
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=["t"],
                subscribed_topic_regex=None,
                server_assignor=None,
                owned={},
                client_id="c",
                client_host="/h",
                api_version=1,
            ),
            answers.append,
        )

    heartbeat("a")
    heartbeat("b")  # waits for a's write
    assert answers == [] and len(log.waiting) == 1
    log.commit_all()  # a's write commits: a answered, b's join runs and writes
    assert [r.member_id for r in answers] == ["a"] and len(log.waiting) == 1
    log.commit_all()
    assert [r.member_id for r in answers] == ["a", "b"]
    assert answers[1].member_epoch == 2  # computed from the group a's write left
    heartbeat("c")
    heartbeat("d")
    h.gc.unload(0)  # leadership moves before c's write commits
    log.commit_all()
    assert [r.error for r in answers[2:]] == [E.NOT_COORDINATOR, E.NOT_COORDINATOR]


def test_members_choose_the_server_assignor() -> None:
    h = Harness()
    h.load()
    t = topic("t", 4)
    h.topics(t)
    r = h.heartbeat(member_id="b", subscribed_topic_names=["t"], server_assignor="range")
    r2 = h.heartbeat(member_id="a", subscribed_topic_names=["t"], server_assignor="range")
    assert r.error == r2.error == E.NONE
    assert h.gc.consumer_group_describe("g").assignor == "range"
    targets = {m: sorted(p[t.topic_id]) for m, p in h.group().target_assignment.items()}
    assert targets == {"a": [0, 1], "b": [2, 3]}  # ranges in member id order
