"""The authorization corpus: what Kafka answers a client that its ACLs deny, request by request.

Both brokers run with an ACL authorizer and ``allow.everyone.if.no.acl.found``, and the corpus
speaks as ``User:ANONYMOUS`` (a plaintext listener's principal, no super user). A resource with
no ACL at all is open to it; each scenario gives its own topics, groups and transactional ids
ACLs for another user, or grants ``User:ANONYMOUS`` some operations only, or denies it some, and
then sends the requests a client would: so it checks Kafka's rules (an allow ACL for one
operation implies DESCRIBE, a deny ACL wins, prefixed and wildcard resources, hidden unknown
topics) and the error each API answers (TOPIC_/GROUP_/TRANSACTIONAL_ID_/CLUSTER_AUTHORIZATION_
FAILED, a topic left out of a listing). The cluster's own ACLs come last (``acl/cluster``), as
they take away the open cluster every other scenario relies on.
"""

from __future__ import annotations

from typing import Any

from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.create_acls import AclCreation, CreateAclsRequest
from protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_producers import TopicRequest as DescribeProducersTopicRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.reference.corpus import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    V_PRODUCE,
    _error_codes,
    _settled,
    add_offsets,
    add_partitions,
    alter_configs,
    commit,
    create_topic,
    delete_records,
    describe_configs,
    end_offsets_of_epochs,
    end_txn,
    fetch,
    find_group_coordinator,
    find_txn_coordinator,
    heartbeat,
    incremental_alter,
    init_producer_id,
    init_txn_producer,
    join,
    list_offsets,
    metadata,
    offset_delete,
    offset_fetch,
    only_groups,
    only_topics,
    produce,
    record_bytes,
    setup_topic,
    sync,
    txn_batch,
    txn_commit,
)
from tests.support.differential import Exchange, Scenario

# Kafka's AclOperation, AclPermissionType, ResourceType and PatternType codes
ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
DENY, ALLOW = 2, 3
GROUP_RESOURCE, CLUSTER_RESOURCE, TXN_RESOURCE = 3, 4, 5
MATCH, LITERAL, PREFIXED = 2, 3, 4

ME = "User:ANONYMOUS"
OTHER = "User:alice"
CLUSTER = "kafka-cluster"

V_ACLS = 3


def acl(
    resource_type: int,
    name: str,
    operation: int,
    permission: int = ALLOW,
    *,
    principal: str = ME,
    pattern: int = LITERAL,
    host: str = "*",
) -> AclCreation:
    return AclCreation(
        resource_type=resource_type,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host=host,
        operation=operation,
        permission_type=permission,
    )


def grant(*creations: AclCreation, label: str = "grant") -> Exchange:
    return Exchange(CreateAclsRequest(creations=list(creations)), V_ACLS, label=label)


def acl_filter(
    resource_type: int = ANY,
    name: str | None = None,
    *,
    pattern: int = ANY,
    principal: str | None = None,
    host: str | None = None,
    operation: int = ANY,
    permission: int = ANY,
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission,
    }


def _sorted_acls(answer: Any) -> Any:
    """DescribeAcls' resources and each one's ACLs in a fixed order: Kafka lists them in its
    cache's order (ZooKeeper mode: by type, pattern type, then name backwards; each resource's
    ACLs as a set), which is no part of the answer's meaning."""
    resources = [
        {**r, "acls": sorted(r["acls"], key=lambda a: sorted(a.items()))}
        for r in answer["resources"]
    ]
    resources.sort(key=lambda r: (r["resource_type"], r["pattern_type"], r["resource_name"]))
    return {**answer, "resources": resources}


def describe_acls(label: str, *, only: str = "", **kw: Any) -> Exchange:
    """DescribeAcls, compared for the resources named ``only``… (and ``*``) when given: the
    brokers may hold other scenarios' ACLs."""

    def project(answer: Any) -> Any:
        answer = _sorted_acls(answer)
        if only:
            answer["resources"] = [
                r
                for r in answer["resources"]
                if r["resource_name"].startswith(only) or r["resource_name"] == "*"
            ]
        return answer

    return Exchange(DescribeAclsRequest(**acl_filter(**kw)), V_ACLS, label=label, project=project)


def delete_acls(label: str, *filters: dict[str, Any]) -> Exchange:
    return Exchange(
        DeleteAclsRequest(filters=[DeleteAclsFilter(**f) for f in filters]), V_ACLS, label=label
    )


def topic_metadata(
    topics: list[str] | None, prefix: str, *, label: str, auto: bool = False
) -> Exchange:
    """Metadata v12 with the topics' authorized operations (a bit per AclOperation)."""
    return metadata(
        topics, auto=auto, topic_operations=True, label=label, project=only_topics(prefix)
    )


def create_partitions(topic: str, count: int, *, label: str = "") -> Exchange:
    return Exchange(
        CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=topic, count=count, assignments=None)],
            timeout_ms=30000,
            validate_only=False,
        ),
        3,
        label=label or "create partitions",
    )


def delete_records_of(topic: str) -> Exchange:
    exchange = delete_records(topic, {0: 1})
    exchange.label = "delete records"
    return exchange


def describe_producers(topic: str) -> Exchange:
    return Exchange(
        DescribeProducersRequest(
            topics=[DescribeProducersTopicRequest(name=topic, partition_indexes=[0])]
        ),
        0,
        label="describe producers",
    )


def describe_groups(groups: list[str], *, label: str) -> Exchange:
    return Exchange(
        DescribeGroupsRequest(groups=groups, include_authorized_operations=True), 5, label=label
    )


def list_groups(prefix: str, *, label: str) -> Exchange:
    return Exchange(
        ListGroupsRequest(states_filter=[], types_filter=[]),
        4,
        label=label,
        project=only_groups(prefix),
    )


def topic_probes(t: str, g: str, prefix: str, *, writes: bool = True) -> list[Exchange]:
    """Every topic request a client sends, as the scenario's ACLs leave it."""
    steps = [
        topic_metadata([t], prefix, label="metadata"),
        topic_metadata(None, prefix, label="metadata of every topic"),
        fetch(t, label="fetch"),
        list_offsets(t, [-1], version=7, label="list offsets"),
        describe_configs(TOPIC_RESOURCE, t, ["retention.ms"]),
        describe_producers(t),
        commit(g, t, 1, label="commit"),
        offset_fetch(g, {t: [0]}, label="offset fetch"),
        offset_fetch(g, None, label="offset fetch of every topic"),
        fetch(t, version=13, topic_id=lambda ctx: ctx.topic_id(t), label="fetch by topic id"),
        Exchange(
            lambda ctx: MetadataRequest(
                topics=[MetadataRequestTopic(topic_id=ctx.topic_id(t), name=None)],
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            ),
            12,
            label="metadata by topic id",
        ),
        end_offsets_of_epochs(t, [0], version=4, label="offset for leader epoch"),
    ]
    if writes:
        steps += [
            produce(t, record_bytes(V_PRODUCE, 1, start=10), label="produce"),
            incremental_alter(t, [("retention.ms", 0, "3600000")], label="incremental alter"),
            alter_configs(t, {"retention.ms": "3600000"}, label="alter configs"),
            create_partitions(t, 2),
            delete_records_of(t),
            offset_delete(g, t),
        ]
    return steps


def _access_scenarios(p: str) -> list[Scenario]:
    """Who may do what to topics, groups and transactional ids."""
    out: list[Scenario] = []

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"acl/{name}", exchanges))

    # a topic whose only ACL is another user's: every request denied, and DeleteTopics too
    t, g = f"{p}-others", f"{p}-others-group"
    add(
        "topic-of-another-user",
        [
            setup_topic(t),
            produce(t, record_bytes(V_PRODUCE, 3)),
            find_group_coordinator(g),
            commit(g, t, 2, label="commit before the ACL"),
            grant(acl(TOPIC_RESOURCE, t, ALL, principal=OTHER)),
            *topic_probes(t, g, p),
            Exchange(
                DeleteTopicsRequest(topic_names=[t], timeout_ms=30000), 4, label="delete topic"
            ),
            Exchange(create_topic(t), 7, label="create it again"),
        ],
    )

    # READ implies DESCRIBE; nothing else
    t, g = f"{p}-read", f"{p}-read-group"
    add(
        "read-only",
        [
            setup_topic(t),
            produce(t, record_bytes(V_PRODUCE, 3)),
            grant(acl(TOPIC_RESOURCE, t, READ)),
            find_group_coordinator(g),
            *topic_probes(t, g, p),
        ],
    )

    # WRITE implies DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS
    t, g = f"{p}-write", f"{p}-write-group"
    add(
        "write-and-alter-configs",
        [
            setup_topic(t),
            grant(acl(TOPIC_RESOURCE, t, WRITE), acl(TOPIC_RESOURCE, t, ALTER_CONFIGS)),
            find_group_coordinator(g),
            *topic_probes(t, g, p),
        ],
    )

    # a deny wins over an allow, whatever the order; a deny for another host does not apply
    t, g = f"{p}-deny", f"{p}-deny-group"
    add(
        "deny-wins",
        [
            setup_topic(t),
            produce(t, record_bytes(V_PRODUCE, 3)),
            grant(
                acl(TOPIC_RESOURCE, t, ALL),
                acl(TOPIC_RESOURCE, t, READ, DENY),
                acl(TOPIC_RESOURCE, t, WRITE, DENY, host="10.9.9.9"),
            ),
            find_group_coordinator(g),
            *topic_probes(t, g, p),
        ],
    )

    # groups: another user's group, and a group ANONYMOUS may only describe
    t = f"{p}-grouptopic"
    denied, described = f"{p}-group-denied", f"{p}-group-described"
    add(
        "groups",
        [
            setup_topic(t),
            find_group_coordinator(denied),
            commit(denied, t, 1, label="commit before the ACL"),
            grant(
                acl(GROUP_RESOURCE, denied, ALL, principal=OTHER),
                acl(GROUP_RESOURCE, described, DESCRIBE),
            ),
            find_group_coordinator(denied),
            join(denied, t, label="join"),
            sync(denied, t, label="sync"),
            heartbeat(denied, label="heartbeat"),
            commit(denied, t, 2, label="commit"),
            offset_fetch(denied, {t: [0]}, label="offset fetch"),
            offset_delete(denied, t),
            describe_groups([denied, described], label="describe"),
            list_groups(p, label="list"),
            Exchange(DeleteGroupsRequest(groups_names=[denied]), 2, label="delete"),
            find_group_coordinator(described),
            join(described, t, key="d", label="join a described group"),
            commit(described, t, 2, label="commit to a described group"),
            offset_fetch(described, {t: [0]}, label="offset fetch of a described group"),
        ],
    )

    # transactional ids: another user's, and one ANONYMOUS may write with but not the topic
    t, secret = f"{p}-txntopic", f"{p}-txntopic-secret"
    txn_denied, txn_ok, g = f"{p}-txn-denied", f"{p}-txn-ok", f"{p}-txn-group"
    denied_group = f"{p}-txn-denied-group"
    add(
        "transactional-ids",
        [
            setup_topic(t),
            setup_topic(secret),
            grant(
                acl(TXN_RESOURCE, txn_denied, ALL, principal=OTHER),
                acl(TXN_RESOURCE, txn_ok, WRITE),
                acl(TOPIC_RESOURCE, t, READ),
                acl(TOPIC_RESOURCE, secret, ALL, principal=OTHER),
                acl(GROUP_RESOURCE, denied_group, ALL, principal=OTHER),
            ),
            Exchange(
                FindCoordinatorRequest(key=txn_denied, key_type=1), 3, label="find coordinator"
            ),
            Exchange(
                InitProducerIdRequest(
                    transactional_id=txn_denied,
                    transaction_timeout_ms=60000,
                    producer_id=-1,
                    producer_epoch=-1,
                ),
                4,
                label="init producer id",
            ),
            Exchange(
                DescribeTransactionsRequest(transactional_ids=[txn_denied]),
                0,
                label="describe transactions",
            ),
            find_txn_coordinator(txn_ok),
            init_txn_producer(txn_ok),
            # another user's transactional id, with this producer's id and epoch
            add_partitions(txn_denied, t, [0], label="add partitions, another user's id"),
            add_offsets(txn_denied, g, label="add offsets, another user's id"),
            txn_commit(txn_denied, g, t, 1, label="txn commit, another user's id"),
            end_txn(txn_denied, label="end, another user's id"),
            produce(
                t,
                txn_batch(1, sequence=0, start=0),
                transactional_id=txn_denied,
                label="produce, another user's id",
            ),
            add_partitions(txn_ok, t, [0], label="add a topic it may not write"),
            add_offsets(txn_ok, denied_group, label="add offsets of another user's group"),
            add_offsets(txn_ok, g, label="add offsets of an open group"),
            txn_commit(txn_ok, denied_group, t, 1, label="txn commit to another user's group"),
            txn_commit(txn_ok, g, secret, 1, label="txn commit of a topic it may not read"),
            txn_commit(txn_ok, g, t, 1, label="txn commit"),
            end_txn(txn_ok, committed=False),
            Exchange(
                DescribeTransactionsRequest(transactional_ids=[txn_ok]),
                0,
                label="describe a written transaction",
                until=_settled,
            ),
            Exchange(
                ListTransactionsRequest(
                    state_filters=[], producer_id_filters=[], duration_filter=-1
                ),
                1,
                label="list transactions",
                project=_only_transactions(p),
            ),
        ],
    )

    return out


def acl_scenarios(prefix: str) -> list[Scenario]:
    p = f"{prefix}-a"
    # who may do what, against Kafka 3.9's AclAuthorizer (Kafka 4.x's answers differ in ways
    # of its own: see docs/compatibility.md)
    out = _access_scenarios(p)
    # the scenarios against Kafka 4.x name their resources apart: the 3.9 scenarios' listings
    # (the cluster's, last) keep only names beginning with ``p``
    p4 = f"{prefix}-k"

    def add(name: str, exchanges: list[Exchange]) -> None:
        out.append(Scenario(f"acl/{name}", exchanges))

    # prefixed and wildcard ACLs; a denied topic that does not exist is hidden (no
    # UNKNOWN_TOPIC_OR_PARTITION) and is not created by Metadata or CreateTopics
    hidden = f"{p4}-hidden-"
    # against Kafka 4.x, which answers the id of a topic created without DESCRIBE_CONFIGS on
    # it, as Odradek does (Kafka 3.9 leaves it zero)
    out.append(
        Scenario(
            "acl/prefixed-and-unknown-topics",
            prefer="4",
            exchanges=[
                grant(
                    acl(TOPIC_RESOURCE, hidden, ALL, principal=OTHER, pattern=PREFIXED),
                    acl(TOPIC_RESOURCE, f"{hidden}visible", DESCRIBE),
                ),
                topic_metadata([f"{hidden}x"], p4, label="an unknown denied topic"),
                topic_metadata([f"{hidden}x"], p4, label="with auto-creation", auto=True),
                topic_metadata([f"{hidden}visible"], p4, label="an unknown described topic"),
                Exchange(create_topic(f"{hidden}x"), 7, label="create a denied topic"),
                produce(f"{hidden}y", record_bytes(V_PRODUCE, 1), label="produce to it"),
                fetch(f"{hidden}y", label="fetch from it"),
                topic_metadata([f"{p4}-open-x"], p4, label="an unknown open topic"),
            ],
        )
    )

    # CreateAcls and DeleteAcls refusals, and DescribeAcls filters
    r = f"{p4}-aclres"
    bad = {
        "resource type ANY": acl(ANY, r, READ),
        "pattern MATCH": acl(TOPIC_RESOURCE, r, READ, pattern=MATCH),
        "pattern ANY": acl(TOPIC_RESOURCE, r, READ, pattern=ANY),
        "principal without a type": acl(TOPIC_RESOURCE, r, READ, principal="alice"),
        "empty principal": acl(TOPIC_RESOURCE, r, READ, principal=""),
        "empty host": acl(TOPIC_RESOURCE, r, READ, host=""),
        "operation ANY": acl(TOPIC_RESOURCE, r, ANY),
        "permission ANY": acl(TOPIC_RESOURCE, r, READ, ANY),
        "a cluster named otherwise": acl(CLUSTER_RESOURCE, "other", ALTER, principal=OTHER),
        "an operation the resource has not": acl(GROUP_RESOURCE, r, WRITE, principal=OTHER),
        "an empty name": acl(TOPIC_RESOURCE, "", READ, principal=OTHER),
        # a prefixed "*" is no wildcard: it names topics beginning with "*"
        "a prefixed wildcard": acl(TOPIC_RESOURCE, "*", READ, principal=OTHER, pattern=PREFIXED),
    }
    # against Kafka 4.x, whose controller checks a new ACL (Kafka 3.9's AclAuthorizer answers
    # UNKNOWN_SERVER_ERROR without a message for most of these)
    out.append(
        Scenario(
            "acl/acl-refusals-and-filters",
            prefer="4",
            exchanges=[
                *(grant(c, label=label) for label, c in bad.items()),
                grant(
                    acl(TOPIC_RESOURCE, r, READ, principal=OTHER),
                    acl(TOPIC_RESOURCE, f"{r}-", WRITE, principal=OTHER, pattern=PREFIXED),
                    acl(TOPIC_RESOURCE, r, DESCRIBE, DENY, principal=OTHER, host="10.1.1.1"),
                    label="valid ones",
                ),
                describe_acls(
                    "literal", only=r, resource_type=TOPIC_RESOURCE, name=r, pattern=LITERAL
                ),
                describe_acls(
                    "match", only=r, resource_type=TOPIC_RESOURCE, name=f"{r}-x", pattern=MATCH
                ),
                describe_acls(
                    "prefixed",
                    only=r,
                    resource_type=TOPIC_RESOURCE,
                    pattern=PREFIXED,
                    principal=OTHER,
                ),
                describe_acls("by host", only=r, principal=OTHER, host="10.1.1.1"),
                describe_acls(
                    "filter pattern MATCH without a name",
                    only=r,
                    resource_type=TOPIC_RESOURCE,
                    pattern=MATCH,
                ),
                describe_acls("unknown resource type", resource_type=0),
                describe_acls("unknown operation", operation=0),
                delete_acls(
                    "delete",
                    acl_filter(TOPIC_RESOURCE, r, pattern=LITERAL, operation=DESCRIBE),
                    acl_filter(TOPIC_RESOURCE, f"{r}-zz", pattern=MATCH),
                ),
                delete_acls("delete by an unknown resource type", acl_filter(0, r)),
                describe_acls("left", only=r, resource_type=TOPIC_RESOURCE, name=r, pattern=ANY),
            ],
        )
    )

    # KIP-848 groups, against Kafka 4.x: a heartbeat to another user's group, a subscription
    # naming a topic the member may not describe, ConsumerGroupDescribe of both groups
    t, secret = f"{p4}-cg", f"{p4}-cg-secret"
    denied_group, group = f"{p4}-cg-denied", f"{p4}-cg-group"
    out.append(
        Scenario(
            "acl/consumer-groups",
            prefer="4",
            exchanges=[
                setup_topic(t),
                setup_topic(secret),
                grant(
                    acl(GROUP_RESOURCE, denied_group, ALL, principal=OTHER),
                    acl(TOPIC_RESOURCE, secret, ALL, principal=OTHER),
                ),
                find_group_coordinator(group),
                consumer_heartbeat(denied_group, [t], label="another user's group"),
                consumer_heartbeat(group, [t, secret], label="a topic it may not describe"),
                consumer_heartbeat(group, [t], label="topics it may describe"),
                consumer_heartbeat(group, [t], label="another member", member="B"),
                Exchange(
                    ConsumerGroupDescribeRequest(
                        group_ids=[denied_group, group], include_authorized_operations=True
                    ),
                    0,
                    label="describe",
                    project=_group_errors,
                ),
                consumer_heartbeat(group, [t], epoch=-1, label="leave"),
            ],
        )
    )

    # the cluster: ANONYMOUS may alter and describe it (so it can still manage ACLs) and take
    # cluster actions (Kafka's brokers speak to each other as ANONYMOUS on a plaintext
    # listener: without it Kafka's controller could not reach its broker), nothing else; last,
    # since every other scenario relies on the open cluster
    t = f"{p}-cluster"
    add(
        "cluster",
        [
            setup_topic(t),
            grant(
                acl(CLUSTER_RESOURCE, CLUSTER, ALTER),
                acl(CLUSTER_RESOURCE, CLUSTER, DESCRIBE),
                acl(CLUSTER_RESOURCE, CLUSTER, CLUSTER_ACTION),
                acl(TOPIC_RESOURCE, t, WRITE),
            ),
            Exchange(
                create_topic(f"{p}-cluster-new"),
                7,
                label="create a topic",
                project=_error_codes,
            ),
            init_producer_id(),
            describe_configs(BROKER_RESOURCE, "0", ["log.retention.ms"]),
            incremental_alter(
                "0",
                [("log.cleaner.threads", 0, "1")],
                resource_type=BROKER_RESOURCE,
                label="alter broker configs",
            ),
            Exchange(
                DescribeClusterRequest(
                    include_cluster_authorized_operations=True,
                    endpoint_type=1,
                    include_fenced_brokers=False,
                ),
                1,
                label="describe cluster",
            ),
            Exchange(
                DescribeLogDirsRequest(topics=None), 4, label="describe log dirs", project=_no_dirs
            ),
            Exchange(
                ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=30000),
                2,
                label="elect leaders",
            ),
            list_groups(p, label="list groups"),
            Exchange(
                ListTransactionsRequest(
                    state_filters=[], producer_id_filters=[], duration_filter=-1
                ),
                1,
                label="list transactions",
                project=_only_transactions(p),
            ),
            describe_acls("describe acls", resource_type=CLUSTER_RESOURCE),
        ],
    )
    return out


def consumer_heartbeat(
    group: str, topics: list[str], *, epoch: int = 0, label: str, member: str = "A"
) -> Exchange:
    """ConsumerGroupHeartbeat v1 of one member (its id chosen by the client, KIP-1082): its
    first heartbeat, or its leave (epoch -1)."""
    return Exchange(
        ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=f"AclMember{member * 13}",
            member_epoch=epoch,
            instance_id=None,
            rack_id=None,
            rebalance_timeout_ms=10000,
            subscribed_topic_names=topics if epoch == 0 else None,
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[] if epoch == 0 else None,
        ),
        1,
        label=label,
        project=_heartbeat_outcome,
    )


def _heartbeat_outcome(answer: Any) -> Any:
    """A heartbeat's error and whether the member is in the group (a positive epoch, whose
    value is D14's), out of it (-1) or never let in (0)."""
    epoch = answer["member_epoch"]
    return {
        "error_code": answer["error_code"],
        "error_message": answer["error_message"],
        "member_epoch": "<in the group>" if epoch > 0 else epoch,
    }


def _group_errors(answer: Any) -> Any:
    """ConsumerGroupDescribe reduced to each group's error and authorized operations (the
    assignment depends on when the coordinator computes it)."""
    return [(g["group_id"], g["error_code"], g["authorized_operations"]) for g in answer["groups"]]


def _only_transactions(prefix: str) -> Any:
    def project(answer: Any) -> Any:
        return {
            **answer,
            "transaction_states": [
                t for t in answer["transaction_states"] if t["transactional_id"].startswith(prefix)
            ],
        }

    return project


def _no_dirs(answer: Any) -> Any:
    """DescribeLogDirs' error only (the directories differ by nature)."""
    return {"error_code": answer.get("error_code"), "count": len(answer["results"])}
