"""DescribeCluster (key 60): the cluster id, controller and brokers (what admin clients use
instead of Metadata, KIP-700). Flexible from v0.

v1 adds ``endpoint_type`` (1 brokers, 2 controllers; KIP-919) and may answer
MISMATCHED_ENDPOINT_TYPE or UNSUPPORTED_ENDPOINT_TYPE; v2 adds ``include_fenced_brokers`` and each
broker's ``is_fenced`` (KIP-1073).
"""

from protocol.api_keys import ApiKey
from protocol.messages.common import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

#: endpoint_type values
ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2

DescribeClusterRequest = message(
    "DescribeClusterRequest",
    api_key=ApiKey.DESCRIBE_CLUSTER,
    kind="request",
    valid="0-2",
    flexible="0+",
    fields=[
        f("include_cluster_authorized_operations", BOOL),
        f("endpoint_type", INT8, "1+", default=ENDPOINT_TYPE_BROKER),
        f("include_fenced_brokers", BOOL, "2+"),
    ],
)

DescribeClusterBroker = struct(
    "DescribeClusterBroker",
    [
        f("broker_id", INT32),
        f("host", STRING),
        f("port", INT32),
        f("rack", STRING, null="0+", default=None),
        f("is_fenced", BOOL, "2+"),
    ],
)

DescribeClusterResponse = message(
    "DescribeClusterResponse",
    api_key=ApiKey.DESCRIBE_CLUSTER,
    kind="response",
    valid="0-2",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
        f("endpoint_type", INT8, "1+", default=ENDPOINT_TYPE_BROKER),
        f("cluster_id", STRING),
        f("controller_id", INT32, default=-1),
        f("brokers", array(DescribeClusterBroker)),
        f("cluster_authorized_operations", INT32, default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)
