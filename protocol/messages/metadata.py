"""Metadata (key 3): brokers, topics, partitions and their leaders.

v0: an empty topic list means all topics. v1+: null means all topics, empty means none.
"""

from protocol.api_keys import ApiKey
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct

MetadataRequestTopic = struct(
    "MetadataRequestTopic",
    [
        f("topic_id", UUID, "10+"),
        f("name", STRING, null="10+"),
    ],
)

MetadataRequest = message(
    "MetadataRequest",
    api_key=ApiKey.METADATA,
    kind="request",
    valid="0-13",
    flexible="9+",
    fields=[
        f("topics", array(MetadataRequestTopic), null="1+"),
        f("allow_auto_topic_creation", BOOL, "4+", default=True),
        f("include_cluster_authorized_operations", BOOL, "8-10"),
        f("include_topic_authorized_operations", BOOL, "8+"),
    ],
)

MetadataResponseBroker = struct(
    "MetadataResponseBroker",
    [
        f("node_id", INT32),
        f("host", STRING),
        f("port", INT32),
        f("rack", STRING, "1+", null="1+", default=None),
    ],
)

MetadataResponsePartition = struct(
    "MetadataResponsePartition",
    [
        f("error_code", INT16),
        f("partition_index", INT32),
        f("leader_id", INT32),
        f("leader_epoch", INT32, "7+", default=-1),
        f("replica_nodes", array(INT32)),
        f("isr_nodes", array(INT32)),
        f("offline_replicas", array(INT32), "5+"),
    ],
)


MetadataResponseTopic = struct(
    "MetadataResponseTopic",
    [
        f("error_code", INT16),
        f("name", STRING, null="12+"),
        f("topic_id", UUID, "10+"),
        f("is_internal", BOOL, "1+", default=False),
        f("partitions", array(MetadataResponsePartition)),
        f("topic_authorized_operations", INT32, "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)

MetadataResponse = message(
    "MetadataResponse",
    api_key=ApiKey.METADATA,
    kind="response",
    valid="0-13",
    flexible="9+",
    fields=[
        f("throttle_time_ms", INT32, "3+"),
        f("brokers", array(MetadataResponseBroker)),
        f("cluster_id", STRING, "2+", null="2+", default=None),
        f("controller_id", INT32, "1+", default=-1),
        f("topics", array(MetadataResponseTopic)),
        f("cluster_authorized_operations", INT32, "8-10", default=AUTHORIZED_OPERATIONS_OMITTED),
        f("error_code", INT16, "13+"),
    ],
)
