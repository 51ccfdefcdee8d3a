"""Produce (key 0): append record batches to partitions.

v0-2 carry legacy message sets (magic 0/1); v3+ carry record batches (magic 2). Kafka 4 dropped
v0-2 but still advertises them (KAFKA-18659); we accept them and convert. v13 names topics by id.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, RECORDS, STRING, UUID, array, f, message, struct

PartitionProduceData = struct(
    "PartitionProduceData",
    [
        f("index", INT32),
        f("records", RECORDS, null="0+"),
    ],
)

TopicProduceData = struct(
    "TopicProduceData",
    [
        f("name", STRING, "0-12"),
        f("topic_id", UUID, "13+"),
        f("partition_data", array(PartitionProduceData)),
    ],
)

ProduceRequest = message(
    "ProduceRequest",
    api_key=ApiKey.PRODUCE,
    kind="request",
    valid="0-13",
    flexible="9+",
    fields=[
        f("transactional_id", STRING, "3+", null="3+", default=None),
        f("acks", INT16),
        f("timeout_ms", INT32),
        f("topic_data", array(TopicProduceData)),
    ],
)

BatchIndexAndErrorMessage = struct(
    "BatchIndexAndErrorMessage",
    [
        f("batch_index", INT32, "8+"),
        f("batch_index_error_message", STRING, "8+", null="8+", default=None),
    ],
)

LeaderIdAndEpoch = struct(
    "LeaderIdAndEpoch",
    [
        f("leader_id", INT32, "10+", default=-1),
        f("leader_epoch", INT32, "10+", default=-1),
    ],
)

PartitionProduceResponse = struct(
    "PartitionProduceResponse",
    [
        f("index", INT32),
        f("error_code", INT16),
        f("base_offset", INT64),
        f("log_append_time_ms", INT64, "2+", default=-1),
        f("log_start_offset", INT64, "5+", default=-1),
        f("record_errors", array(BatchIndexAndErrorMessage), "8+"),
        f("error_message", STRING, "8+", null="8+", default=None),
        f("current_leader", LeaderIdAndEpoch, "10+", tag=0),
    ],
)

TopicProduceResponse = struct(
    "TopicProduceResponse",
    [
        f("name", STRING, "0-12"),
        f("topic_id", UUID, "13+"),
        f("partition_responses", array(PartitionProduceResponse)),
    ],
)

NodeEndpoint = struct(
    "NodeEndpoint",
    [
        f("node_id", INT32, "10+"),
        f("host", STRING, "10+"),
        f("port", INT32, "10+"),
        f("rack", STRING, "10+", null="10+", default=None),
    ],
)

ProduceResponse = message(
    "ProduceResponse",
    api_key=ApiKey.PRODUCE,
    kind="response",
    valid="0-13",
    flexible="9+",
    fields=[
        f("responses", array(TopicProduceResponse)),
        f("throttle_time_ms", INT32, "1+"),
        f("node_endpoints", array(NodeEndpoint), "10+", tag=0),
    ],
)
