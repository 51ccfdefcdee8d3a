"""InitProducerId: a producer id for an idempotent producer (epoch 0).

Ids come from blocks the metadata store hands out once (they survive restarts). As in Kafka, an
idempotent producer (no transactional id) always gets a new id, also when it passes its old id
and epoch (v3+, KIP-360): epoch bumps of idempotent producers happen on the client, and the
broker's sequence checks accept a higher epoch starting at sequence 0. Transactional ids are a
later issue (the transaction APIs are not advertised).
"""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse


@handler(ApiKey.INIT_PRODUCER_ID, "0-5", acl=(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID))
def handle_init_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        raise KafkaApiError(
            "transactions are not supported by this broker yet", ErrorCode.INVALID_REQUEST
        )
    producer_id = ctx.services.producer_ids.generate_producer_id()
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
    )


@error_response(ApiKey.INIT_PRODUCER_ID)
def init_producer_id_error(
    request: InitProducerIdRequest, code: ErrorCode, message: str | None
) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
