"""DescribeTransactions (key 65, KIP-664): the state of transactional ids, from their
coordinator. v0 is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

DescribeTransactionsRequest = message(
    "DescribeTransactionsRequest",
    api_key=ApiKey.DESCRIBE_TRANSACTIONS,
    kind="request",
    valid="0",
    flexible="0+",
    fields=[f("transactional_ids", array(STRING))],
)

TopicData = struct(
    "TopicData",
    [
        f("topic", STRING),
        f("partitions", array(INT32)),
    ],
)

TransactionState = struct(
    "TransactionState",
    [
        f("error_code", INT16),
        f("transactional_id", STRING),
        f("transaction_state", STRING),
        f("transaction_timeout_ms", INT32),
        f("transaction_start_time_ms", INT64),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("topics", array(TopicData)),
    ],
)

DescribeTransactionsResponse = message(
    "DescribeTransactionsResponse",
    api_key=ApiKey.DESCRIBE_TRANSACTIONS,
    kind="response",
    valid="0",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("transaction_states", array(TransactionState)),
    ],
)
