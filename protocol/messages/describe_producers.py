"""DescribeProducers (key 61, KIP-664): the active producers of partitions, as their leader's
producer state knows them (id, epoch, last sequence and timestamp, coordinator epoch, and the
first offset of an open transaction). v0 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

TopicRequest = struct(
    "TopicRequest",
    [
        f("name", STRING),
        f("partition_indexes", array(INT32)),
    ],
)

DescribeProducersRequest = message(
    "DescribeProducersRequest",
    api_key=ApiKey.DESCRIBE_PRODUCERS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[f("topics", array(TopicRequest))],
)

ProducerState = struct(
    "ProducerState",
    [
        f("producer_id", INT64),
        f("producer_epoch", INT32),
        f("last_sequence", INT32, default=-1),
        f("last_timestamp", INT64, default=-1),
        f("coordinator_epoch", INT32),
        f("current_txn_start_offset", INT64, default=-1),
    ],
)

PartitionResponse = struct(
    "PartitionResponse",
    [
        f("partition_index", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
        f("active_producers", array(ProducerState)),
    ],
)

TopicResponse = struct(
    "TopicResponse",
    [
        f("name", STRING),
        f("partitions", array(PartitionResponse)),
    ],
)

DescribeProducersResponse = message(
    "DescribeProducersResponse",
    api_key=ApiKey.DESCRIBE_PRODUCERS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("topics", array(TopicResponse)),
    ],
)
