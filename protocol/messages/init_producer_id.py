"""InitProducerId (key 22): get a producer id and epoch, for idempotence or a transaction.

A null ``transactional_id`` asks for an idempotent producer id. v1 is v0, v2 is flexible, v3 lets
a producer pass its current id and epoch to recover after INVALID_PRODUCER_EPOCH (KIP-360), v4
may answer PRODUCER_FENCED, v5 TRANSACTION_ABORTABLE (KIP-890). v6 adds two-phase commit
(KIP-939): ``enable2_pc`` and ``keep_prepared_txn`` in the request and the ongoing transaction's
producer id and epoch in the response.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, f, message

InitProducerIdRequest = message(
    "InitProducerIdRequest",
    api_key=ApiKey.INIT_PRODUCER_ID,
    kind="request",
    valid="0-6",
    flexible="2+",
    fields=[
        f("transactional_id", STRING, null="0+"),
        f("transaction_timeout_ms", INT32),
        f("producer_id", INT64, "3+", default=-1),
        f("producer_epoch", INT16, "3+", default=-1),
        f("enable2_pc", BOOL, "6+", default=False),
        f("keep_prepared_txn", BOOL, "6+", default=False),
    ],
)

InitProducerIdResponse = message(
    "InitProducerIdResponse",
    api_key=ApiKey.INIT_PRODUCER_ID,
    kind="response",
    valid="0-6",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("producer_id", INT64, default=-1),
        f("producer_epoch", INT16),
        f("ongoing_txn_producer_id", INT64, "6+", default=-1),
        f("ongoing_txn_producer_epoch", INT16, "6+", default=-1),
    ],
)
