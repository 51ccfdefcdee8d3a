"""AddOffsetsToTxn (key 25): add a consumer group's offsets topic partition to a transaction, before
the producer's TxnOffsetCommit.

v1 is v0; v2 may answer PRODUCER_FENCED; v3 is flexible; v4 may answer TRANSACTION_ABORTABLE
(KIP-890).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, INT32, INT64, STRING, f, message

AddOffsetsToTxnRequest = message(
    "AddOffsetsToTxnRequest",
    api_key=ApiKey.ADD_OFFSETS_TO_TXN,
    kind="request",
    valid="0-4",
    flexible="3+",
    fields=[
        f("transactional_id", STRING),
        f("producer_id", INT64),
        f("producer_epoch", INT16),
        f("group_id", STRING),
    ],
)

AddOffsetsToTxnResponse = message(
    "AddOffsetsToTxnResponse",
    api_key=ApiKey.ADD_OFFSETS_TO_TXN,
    kind="response",
    valid="0-4",
    flexible="3+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
    ],
)
