"""AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition to the transaction, before
the producer sends TxnOffsetCommit to the group coordinator (KIP-98). v2+ may answer
PRODUCER_FENCED (older versions INVALID_PRODUCER_EPOCH)."""

from __future__ import annotations

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._txn import fenced_for, respond, transactions
from broker.registry import error_response, handler
from coordination.metadata.view import OFFSETS_TOPIC
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse


@handler(ApiKey.ADD_OFFSETS_TO_TXN, "0-4", acl=(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID))
def handle_add_offsets_to_txn(
    ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse | Later:
    # Kafka's checks: WRITE on the transactional id, READ on the group
    ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
    version = ctx.api_version
    partition = ctx.services.groups.coordinator.partition_for(request.group_id)
    answer: Answer[ErrorCode] = Answer()
    transactions(ctx).add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, partition)],
        answer,
    )
    return respond(
        answer,
        lambda code: AddOffsetsToTxnResponse(
            throttle_time_ms=0, error_code=fenced_for(code, version, 2)
        ),
    )


@error_response(ApiKey.ADD_OFFSETS_TO_TXN)
def add_offsets_to_txn_error(
    request: AddOffsetsToTxnRequest, code: ErrorCode, message: str | None
) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=code)
