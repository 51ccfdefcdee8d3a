"""EndTxn: commit or abort a producer's transaction (KIP-98).

The coordinator writes PrepareCommit/PrepareAbort and answers; the markers and the Complete state
follow. v2+ may answer PRODUCER_FENCED (older versions INVALID_PRODUCER_EPOCH). v5 is transaction
version 2 (KIP-890 part 2): the coordinator bumps the producer's epoch with every EndTxn and the
answer gives the producer id and epoch to use next (-1 and -1 with an error), as Kafka's
``handleEndTxnRequest`` takes v5 for ``TransactionVersion.TV_2`` whatever level the cluster
finalized.
"""

from __future__ import annotations

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._txn import fenced_for, respond, transactions
from broker.registry import error_response, handler
from coordination.txn.metadata import TV_2
from coordination.txn.shard import TxnResult
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse


@handler(ApiKey.END_TXN, "0-5", acl=(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID))
def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse | Later:
    ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    version = ctx.api_version
    answer: Answer[TxnResult] = Answer()
    transactions(ctx).end_txn(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
        answer,
        client_transaction_version=TV_2 if version >= 5 else 0,
    )
    return respond(
        answer,
        lambda r: EndTxnResponse(
            throttle_time_ms=0,
            error_code=fenced_for(r.error, version, 2),
            producer_id=r.producer_id if r.error == ErrorCode.NONE else -1,
            producer_epoch=r.producer_epoch if r.error == ErrorCode.NONE else -1,
        ),
    )


@error_response(ApiKey.END_TXN)
def end_txn_error(request: EndTxnRequest, code: ErrorCode, message: str | None) -> EndTxnResponse:
    return EndTxnResponse(error_code=code)
