"""Group and offset APIs at every served version, with raw requests written by our codecs:
old (v0) and new (v9) JoinGroup flows, batched FindCoordinator/LeaveGroup/OffsetFetch, commit
metadata and leader epochs round-tripping through every OffsetCommit/OffsetFetch version, and the
errors clients rely on."""

from __future__ import annotations

import threading
import time

import pytest

from coordination.group.consumer_protocol import (
    assigned_partitions,
    encode_assignment,
    encode_subscription,
)
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.integration.test_groups import GROUP_SETTINGS
from tests.integration.test_idempotence import RawClient
from tests.support.kafka_clients import create_topic

E = ErrorCode


def commit(client: RawClient, version: int, group: str, topic: str, offsets: dict, **kw):
    body = OffsetCommitRequest(
        group_id=group,
        member_id=kw.get("member_id", ""),
        generation_id_or_member_epoch=kw.get("generation", -1),
        retention_time_ms=kw.get("retention", -1),
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=7,
                        committed_metadata=f"m{version}-{p}",
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    r = client.request(body, version)
    return {p.partition_index: p.error_code for p in r.topics[0].partitions}


def fetch(client: RawClient, version: int, group: str, topic: str, partitions: list[int] | None):
    """{partition: (offset, epoch, metadata, error)} and the group-level error."""
    if version >= 8:
        body = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=group,
                    topics=None
                    if partitions is None
                    else [OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)],
                )
            ]
        )
        r = client.request(body, version)
        (g,) = r.groups
        topics, code = g.topics, g.error_code
    else:
        body = OffsetFetchRequest(
            group_id=group,
            topics=None
            if partitions is None
            else [OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
        )
        r = client.request(body, version)
        topics, code = r.topics, r.error_code if version >= 2 else E.NONE
    out = {}
    for t in topics:
        if t.name != topic:
            continue
        for p in t.partitions:
            out[p.partition_index] = (
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata,
                p.error_code,
            )
    return out, code


@pytest.mark.parametrize("version", range(10))
def test_offset_commit_and_fetch_every_version(broker, topic_name, version):
    create_topic(broker.bootstrap, topic_name, 2)
    client = RawClient(broker.bootstrap)
    group = f"{topic_name}-v{version}"
    client.request(FindCoordinatorRequest(key=group), 0)
    assert commit(client, version, group, topic_name, {0: 11, 1: 22}) == {0: E.NONE, 1: E.NONE}
    got, code = fetch(client, min(version, 9), group, topic_name, [0, 1, 5])
    assert code == E.NONE
    epoch = 7 if version >= 6 else -1
    read_epoch = lambda e: e if min(version, 9) >= 5 else -1  # noqa: E731
    assert got[0] == (11, read_epoch(epoch), f"m{version}-0", E.NONE)
    assert got[1] == (22, read_epoch(epoch), f"m{version}-1", E.NONE)
    assert got[5] == (-1, -1, "", E.NONE)
    if version >= 2:
        everything, _ = fetch(client, version, group, topic_name, None)
        assert sorted(everything) == [0, 1]
    # an unknown topic's partitions are refused one by one
    assert commit(client, version, group, "no-such-topic", {0: 1}) == {
        0: E.UNKNOWN_TOPIC_OR_PARTITION
    }
    client.close()


def test_offset_fetch_v8_batches_groups(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 1)
    client = RawClient(broker.bootstrap)
    commit(client, 8, "batch-a", topic_name, {0: 5})
    r = client.request(
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=g,
                    topics=[OffsetFetchRequestTopics(name=topic_name, partition_indexes=[0])],
                )
                for g in ("batch-a", "batch-never")
            ]
        ),
        8,
    )
    client.close()
    offsets = {g.group_id: g.topics[0].partitions[0].committed_offset for g in r.groups}
    assert offsets == {"batch-a": 5, "batch-never": -1}


def test_find_coordinator_versions(broker):
    client = RawClient(broker.bootstrap)
    host, port = broker.bootstrap.rsplit(":", 1)
    for version in range(4):
        r = client.request(FindCoordinatorRequest(key="fc-group"), version)
        assert (r.error_code, r.host, r.port) == (E.NONE, host, int(port))
    r = client.request(FindCoordinatorRequest(coordinator_keys=["a", "b", "c"]), 4)
    assert [(c.key, c.error_code, c.port) for c in r.coordinators] == [
        (k, E.NONE, int(port)) for k in "abc"
    ]
    # a transactional id (key type 1): its __transaction_state partition's leader
    r = client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["txn"]), 6)
    assert (r.coordinators[0].error_code, r.coordinators[0].port) == (E.NONE, int(port))
    r = client.request(FindCoordinatorRequest(key_type=2, coordinator_keys=["share"]), 6)
    assert r.coordinators[0].error_code == E.INVALID_REQUEST
    client.close()


def test_find_coordinator_transaction_key_every_version(fresh_broker):
    """FindCoordinator with key type 1 (a transactional id, KIP-98) at every version the broker
    advertises that carries the key type (v1+; v0 has no key_type field and always looks up a
    group): the first lookup creates ``__transaction_state`` and is answered with its leader;
    v1-3 answer one id, v4+ several ids batched in one request (KIP-699), each in order."""
    broker = fresh_broker(**{"transaction.state.log.num.partitions": "4"})
    client = RawClient(broker.bootstrap)
    host, port = broker.bootstrap.rsplit(":", 1)
    r = client.request(
        ApiVersionsRequest(client_software_name="odradek-test", client_software_version="1"), 3
    )
    (fc,) = [k for k in r.api_keys if k.api_key == ApiKey.FIND_COORDINATOR]
    assert fc.min_version == 0 and fc.max_version >= 4, (fc.min_version, fc.max_version)
    meta = client.request(MetadataRequest(topics=None), 12)
    (node_id,) = [b.node_id for b in meta.brokers]
    assert "__transaction_state" not in {t.name for t in meta.topics}
    # a group lookup does not create the transaction topic: the answers below are the
    # transaction coordinator's
    r = client.request(FindCoordinatorRequest(key_type=0, key="fc-txn-group"), 1)
    assert r.error_code == E.NONE
    meta = client.request(MetadataRequest(topics=None), 12)
    internal = {t.name for t in meta.topics if t.is_internal}
    assert "__consumer_offsets" in internal and "__transaction_state" not in internal
    for version in range(1, min(fc.max_version, 3) + 1):
        r = client.request(FindCoordinatorRequest(key_type=1, key=f"fc-txn-v{version}"), version)
        assert (r.error_code, r.error_message, r.node_id, r.host, r.port) == (
            E.NONE,
            "NONE",
            node_id,
            host,
            int(port),
        ), version
    meta = client.request(
        MetadataRequest(topics=[MetadataRequestTopic(name="__transaction_state")]), 12
    )
    (state,) = meta.topics
    assert state.error_code == E.NONE and state.is_internal and len(state.partitions) == 4
    for version in range(4, fc.max_version + 1):
        keys = [f"fc-txn-v{version}-{i}" for i in range(5)]
        r = client.request(FindCoordinatorRequest(key_type=1, coordinator_keys=keys), version)
        assert [
            (c.key, c.error_code, c.error_message, c.node_id, c.host, c.port)
            for c in r.coordinators
        ] == [(k, E.NONE, None, node_id, host, int(port)) for k in keys], version
    client.close()


def join(client: RawClient, version: int, group: str, member_id: str = "", **kw):
    return client.request(
        JoinGroupRequest(
            group_id=group,
            session_timeout_ms=kw.get("session", 6000),
            rebalance_timeout_ms=kw.get("rebalance", 10000),
            member_id=member_id,
            group_instance_id=kw.get("instance"),
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(
                    name=kw.get("protocol", "range"), metadata=encode_subscription(["t"])
                )
            ],
        ),
        version,
    )


def sync(client: RawClient, version: int, group: str, member_id: str, generation: int, **kw):
    return client.request(
        SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            protocol_type=kw.get("protocol_type"),
            protocol_name=kw.get("protocol_name"),
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in kw.get("assignments", {}).items()
            ],
        ),
        version,
    )


@pytest.mark.parametrize(("join_v", "sync_v", "hb_v", "leave_v"), [(0, 0, 0, 0), (9, 5, 4, 5)])
def test_one_member_flow_old_and_new_versions(fresh_broker, join_v, sync_v, hb_v, leave_v):
    broker = fresh_broker(**GROUP_SETTINGS)
    client = RawClient(broker.bootstrap)
    group = f"flow-{join_v}"
    client.request(FindCoordinatorRequest(key=group), 0)
    member_id = ""
    if join_v >= 4:
        r = join(client, join_v, group)
        assert r.error_code == E.MEMBER_ID_REQUIRED and r.member_id
        member_id = r.member_id
    r = join(client, join_v, group, member_id)
    assert r.error_code == E.NONE and r.generation_id == 1 and r.leader == r.member_id
    assert [m.member_id for m in r.members] == [r.member_id]
    if join_v >= 7:
        assert (r.protocol_type, r.protocol_name) == ("consumer", "range")
    me, generation = r.member_id, r.generation_id
    mine = encode_assignment({"t": [0, 1]})
    extra = {"protocol_type": "consumer", "protocol_name": "range"} if sync_v >= 5 else {}
    if sync_v >= 5:
        bad = sync(client, sync_v, group, me, generation, protocol_name="roundrobin")
        assert bad.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    s = sync(client, sync_v, group, me, generation, assignments={me: mine}, **extra)
    assert s.error_code == E.NONE and assigned_partitions(s.assignment) == {"t": [0, 1]}
    hb = client.request(
        HeartbeatRequest(group_id=group, generation_id=generation, member_id=me), hb_v
    )
    assert hb.error_code == E.NONE
    hb = client.request(HeartbeatRequest(group_id=group, generation_id=99, member_id=me), hb_v)
    assert hb.error_code == E.ILLEGAL_GENERATION
    # a group member commits with its generation; a stranger may not while it is alive
    create_topic(broker.bootstrap, "t", 2)
    assert commit(client, 8, group, "t", {0: 3}, member_id=me, generation=generation) == {0: E.NONE}
    assert commit(client, 8, group, "t", {0: 4}) == {0: E.UNKNOWN_MEMBER_ID}
    if leave_v >= 3:
        r = client.request(
            LeaveGroupRequest(
                group_id=group,
                members=[MemberIdentity(member_id=me), MemberIdentity(member_id="ghost")],
            ),
            leave_v,
        )
        assert [m.error_code for m in r.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    else:
        r = client.request(LeaveGroupRequest(group_id=group, member_id=me), leave_v)
        assert r.error_code == E.NONE
    r = client.request(DescribeGroupsRequest(groups=[group]), 5)
    assert r.groups[0].group_state == "Empty"
    client.close()


def test_two_members_leader_assigns_follower_waits(fresh_broker):
    broker = fresh_broker(**GROUP_SETTINGS)
    leader, follower = RawClient(broker.bootstrap), RawClient(broker.bootstrap)
    group = "two"
    leader.request(FindCoordinatorRequest(key=group), 0)
    # v5 without an instance id: MEMBER_ID_REQUIRED hands out the ids first
    ids = [join(c, 5, group).member_id for c in (leader, follower)]
    results = {}
    threads = [
        threading.Thread(target=lambda c=c, m=m: results.__setitem__(m, join(c, 5, group, m)))
        for c, m in zip((leader, follower), ids, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    lead = next(r for r in results.values() if r.members)
    other = next(r for r in results.values() if not r.members)
    assert {m.member_id for m in lead.members} == set(ids)
    assert lead.generation_id == other.generation_id == 1
    clients = dict(zip(ids, (leader, follower), strict=True))
    waiting = {}
    t = threading.Thread(
        target=lambda: waiting.setdefault(
            "r", sync(clients[other.member_id], 3, group, other.member_id, 1)
        )
    )
    t.start()
    s = sync(
        clients[lead.member_id],
        3,
        group,
        lead.member_id,
        1,
        assignments={lead.member_id: b"L", other.member_id: b"F"},
    )
    t.join(30)
    assert bytes(s.assignment) == b"L" and bytes(waiting["r"].assignment) == b"F"
    r = leader.request(ListGroupsRequest(states_filter=["Stable"]), 4)
    assert [(g.group_id, g.group_state) for g in r.groups] == [(group, "Stable")]
    r = leader.request(ListGroupsRequest(states_filter=["Empty"]), 4)
    assert r.groups == []
    r = leader.request(ListGroupsRequest(types_filter=["consumer"]), 5)
    assert r.groups == []
    d = leader.request(DescribeGroupsRequest(groups=[group], include_authorized_operations=True), 5)
    assert d.groups[0].group_state == "Stable" and len(d.groups[0].members) == 2
    assert d.groups[0].authorized_operations > 0
    r = leader.request(DeleteGroupsRequest(groups_names=[group, "nope"]), 2)
    assert [(x.group_id, x.error_code) for x in r.results] == [
        (group, E.NON_EMPTY_GROUP),
        ("nope", E.GROUP_ID_NOT_FOUND),
    ]
    leader.close()
    follower.close()


def test_concurrent_first_find_coordinators_all_get_the_coordinator(fresh_broker):
    broker = fresh_broker()
    clients = [RawClient(broker.bootstrap) for _ in range(3)]
    start = threading.Barrier(len(clients))
    codes: list[int] = []

    def find(client: RawClient, group: str) -> None:
        start.wait()
        codes.append(client.request(FindCoordinatorRequest(key=group), 1).error_code)

    threads = [threading.Thread(target=find, args=(c, f"g{i}")) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the first creates __consumer_offsets; the others wait for it instead of being answered
    # COORDINATOR_NOT_AVAILABLE while the coordinator takes its partitions
    assert codes == [E.NONE] * len(clients)
    for c in clients:
        c.close()


def test_describe_unknown_group_by_version(broker):
    client = RawClient(broker.bootstrap)
    client.request(FindCoordinatorRequest(key="unknown-g"), 0)
    old = client.request(DescribeGroupsRequest(groups=["unknown-g"]), 5).groups[0]
    new = client.request(DescribeGroupsRequest(groups=["unknown-g"]), 6).groups[0]
    client.close()
    assert (old.error_code, old.group_state) == (E.NONE, "Dead")
    assert (new.error_code, new.group_state) == (E.GROUP_ID_NOT_FOUND, "Dead")


def test_offset_delete(broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    client = RawClient(broker.bootstrap)
    group = f"{topic_name}-od"
    commit(client, 8, group, topic_name, {0: 1, 1: 2})
    r = client.request(
        OffsetDeleteRequest(
            group_id=group,
            topics=[
                OffsetDeleteRequestTopic(
                    name=topic_name, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        ),
        0,
    )
    assert r.error_code == E.NONE and r.topics[0].partitions[0].error_code == E.NONE
    got, _ = fetch(client, 8, group, topic_name, [0, 1])
    assert got[0][0] == -1 and got[1][0] == 2
    r = client.request(OffsetDeleteRequest(group_id="never-seen", topics=[]), 0)
    assert r.error_code == E.GROUP_ID_NOT_FOUND
    client.close()


def test_shutdown_answers_a_member_waiting_in_join_group(fresh_broker):
    broker = fresh_broker(**{"group.initial.rebalance.delay.ms": "60000"})
    client = RawClient(broker.bootstrap)
    client.request(FindCoordinatorRequest(key="waiting"), 0)
    member_id = join(client, 5, "waiting").member_id
    answer = {}
    t = threading.Thread(
        target=lambda: answer.setdefault("r", join(client, 5, "waiting", member_id))
    )
    t.start()
    deadline = time.monotonic() + 10
    while "preparing to rebalance group waiting" not in broker.log():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert broker.stop() == 0
    t.join(10)
    client.close()
    assert answer["r"].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert "stopped cleanly" in broker.log()
