"""ControlledShutdown (key 7): a broker about to stop asks the controller to move the leadership
of its partitions to other in-sync replicas (Kafka's ZooKeeper mode). The controller answers the
partitions this broker still leads; the broker retries until none remain.

Version 0 has a request header without client id (request header v0: api key, version,
correlation id); v1 is v0 with the standard header; v2 adds the broker epoch (KIP-380); v3 is
flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

ControlledShutdownRequest = message(
    "ControlledShutdownRequest",
    api_key=ApiKey.CONTROLLED_SHUTDOWN,
    kind="request",
    valid="0-3",
    flexible="3+",
    fields=[
        f("broker_id", INT32),
        f("broker_epoch", INT64, "2+", default=-1),
    ],
)

RemainingPartition = struct(
    "RemainingPartition",
    [
        f("topic_name", STRING),
        f("partition_index", INT32),
    ],
)

ControlledShutdownResponse = message(
    "ControlledShutdownResponse",
    api_key=ApiKey.CONTROLLED_SHUTDOWN,
    kind="response",
    valid="0-3",
    flexible="3+",
    fields=[
        f("error_code", INT16),
        f("remaining_partitions", array(RemainingPartition)),
    ],
)
