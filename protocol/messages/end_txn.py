"""EndTxn (key 26): commit or abort a producer's transaction.

v1 is v0; v2 may answer PRODUCER_FENCED; v3 is flexible; v4 may answer TRANSACTION_ABORTABLE;
v5 bumps the producer epoch on every transaction (KIP-890 part 2), so the response returns the
producer id and epoch to use next.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, f, message

EndTxnRequest = message(
    "EndTxnRequest",
    api_key=ApiKey.END_TXN,
    kind="request",
    valid="0-5",
    flexible="3+",
    fields=[
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("committed", BOOL),
    ],
)

EndTxnResponse = message(
    "EndTxnResponse",
    api_key=ApiKey.END_TXN,
    kind="response",
    valid="0-5",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, "5+", default=-1),
        f("producer_epoch", INT16, "5+", default=-1),
    ],
)
