"""InitProducerId: a producer id and epoch for an idempotent or a transactional producer.

Without a ``transactional_id`` (idempotence) a new id comes from blocks the metadata store hands
out once (they survive restarts; the next is fetched ahead, and a request that finds none ready
waits for the store off its processor loop); as in Kafka, an idempotent producer always gets a
new id, also when it passes its old id and epoch (v3+, KIP-360): its epoch bumps happen on the
client.

With a ``transactional_id`` the transaction coordinator answers (KIP-98): the id's producer id
with its epoch bumped, fencing older instances; an open transaction of the previous instance is
aborted first (CONCURRENT_TRANSACTIONS meanwhile: the client retries); v3+ may pass the current
id and epoch to bump its own epoch (KIP-360). PRODUCER_FENCED goes to v4+ clients, older ones
get INVALID_PRODUCER_EPOCH. v6 (KIP-939 two-phase commit) is not served.
"""

from __future__ import annotations

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._txn import fenced_for, respond, transactions
from broker.registry import error_response, handler
from coordination.errors import KafkaApiError
from coordination.producer_id_manager import ProducerIdManager
from coordination.txn.shard import TxnResult
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse


@handler(ApiKey.INIT_PRODUCER_ID, "0-5", acl=(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID))
def handle_init_producer_id(
    ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse | Later:
    if request.transactional_id is None:
        # an idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        # (KIP-679)
        if not ctx.authorize(
            AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False
        ) and not ctx.authorize_any(AclOperation.WRITE, ResourceType.TOPIC):
            raise KafkaApiError(
                f"{ctx.session.principal} may not write (IDEMPOTENT_WRITE on the cluster or "
                "WRITE on a topic)",
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            )
        ids = ctx.services.producer_ids
        if ids.needs_store:
            # a new block from the metadata store (a ZooKeeper write): off the processor loop
            return Later(ctx.run_blocking(_idempotent, ids))
        return _idempotent(ids)
    ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
    version = ctx.api_version
    answer: Answer[TxnResult] = Answer()
    transactions(ctx).init_producer_id(
        request.transactional_id,
        request.transaction_timeout_ms,
        answer,
        expected_producer_id=request.producer_id if version >= 3 else -1,
        expected_producer_epoch=request.producer_epoch if version >= 3 else -1,
    )

    def build(result: TxnResult) -> InitProducerIdResponse:
        return InitProducerIdResponse(
            throttle_time_ms=0,
            error_code=fenced_for(result.error, version, 4),
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )

    return respond(answer, build)


def _idempotent(ids: ProducerIdManager) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        producer_id=ids.generate_producer_id(),
        producer_epoch=0,
    )


@error_response(ApiKey.INIT_PRODUCER_ID)
def init_producer_id_error(
    request: InitProducerIdRequest, code: ErrorCode, message: str | None
) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
