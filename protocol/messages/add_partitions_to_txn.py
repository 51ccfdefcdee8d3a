"""AddPartitionsToTxn (key 24): add partitions to a producer's ongoing transaction.

v0-3 carry one transaction (the ``v3_and_below_*`` fields) and are what clients send; v2 may answer
PRODUCER_FENCED; v3 is flexible. v4+ are the brokers' batched form (KIP-890): a ``transactions``
array, each with ``verify_only``, answered per transaction under a top-level error code. v5 may
answer TRANSACTION_ABORTABLE.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct

AddPartitionsToTxnTopic = struct(
    "AddPartitionsToTxnTopic",
    [
        f("name", STRING),
        f("partitions", array(INT32)),
    ],
)

AddPartitionsToTxnTransaction = struct(
    "AddPartitionsToTxnTransaction",
    [
        f("transactional_id", STRING, "4+"),
        f("producer_id", INT64, "4+"),
        f("producer_epoch", INT16, "4+"),
        f("verify_only", BOOL, "4+", default=False),
        f("topics", array(AddPartitionsToTxnTopic), "4+"),
    ],
)

AddPartitionsToTxnRequest = message(
    "AddPartitionsToTxnRequest",
    api_key=ApiKey.ADD_PARTITIONS_TO_TXN,
    kind="request",
    valid="0-5",
    flexible="3+",
    fields=[
        f("transactions", array(AddPartitionsToTxnTransaction), "4+"),
        f("v3_and_below_transactional_id", STRING, "0-3"),
        f("v3_and_below_producer_id", INT64, "0-3"),
        f("v3_and_below_producer_epoch", INT16, "0-3"),
        f("v3_and_below_topics", array(AddPartitionsToTxnTopic), "0-3"),
    ],
)

AddPartitionsToTxnPartitionResult = struct(
    "AddPartitionsToTxnPartitionResult",
    [
        f("partition_index", INT32),
        f("partition_error_code", INT16),
    ],
)

AddPartitionsToTxnTopicResult = struct(
    "AddPartitionsToTxnTopicResult",
    [
        f("name", STRING),
        f("results_by_partition", array(AddPartitionsToTxnPartitionResult)),
    ],
)

AddPartitionsToTxnResult = struct(
    "AddPartitionsToTxnResult",
    [
        f("transactional_id", STRING, "4+"),
        f("topic_results", array(AddPartitionsToTxnTopicResult), "4+"),
    ],
)

AddPartitionsToTxnResponse = message(
    "AddPartitionsToTxnResponse",
    api_key=ApiKey.ADD_PARTITIONS_TO_TXN,
    kind="response",
    valid="0-5",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16, "4+"),
        f("results_by_transaction", array(AddPartitionsToTxnResult), "4+"),
        f("results_by_topic_v3_and_below", array(AddPartitionsToTxnTopicResult), "0-3"),
    ],
)
