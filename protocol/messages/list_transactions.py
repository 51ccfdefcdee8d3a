"""ListTransactions (key 66, KIP-664): the transactional ids a broker coordinates, filtered by
state and producer id; v1 adds a duration filter (KIP-994: only transactions open longer), v2 a
transactional id pattern (KIP-1152: a Java regular expression the whole id must match). v0 is
flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct

ListTransactionsRequest = message(
    "ListTransactionsRequest",
    api_key=ApiKey.LIST_TRANSACTIONS,
    kind="request",
    valid="0-2",
    flexible="0+",
    fields=[
        f("state_filters", array(STRING)),
        f("producer_id_filters", array(INT64)),
        f("duration_filter", INT64, "1+", default=-1),
        f("transactional_id_pattern", STRING, "2+", null="2+", default=None),
    ],
)

ListedTransactionState = struct(
    "ListedTransactionState",
    [
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("transaction_state", STRING),
    ],
)

ListTransactionsResponse = message(
    "ListTransactionsResponse",
    api_key=ApiKey.LIST_TRANSACTIONS,
    kind="response",
    valid="0-2",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("unknown_state_filters", array(STRING)),
        f("transaction_states", array(ListedTransactionState)),
    ],
)
