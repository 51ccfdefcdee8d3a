"""DescribeTransactions (KIP-664): the state of transactional ids this broker coordinates (their
state by Kafka's name, timeout, start time, producer id and epoch, and partitions);
TRANSACTIONAL_ID_NOT_FOUND for an unknown id, NOT_COORDINATOR for an id another broker
coordinates, COORDINATOR_LOAD_IN_PROGRESS while its partition loads."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._txn import transactions
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
    TransactionState,
)


def _state(ctx: RequestContext, transactional_id: str) -> TransactionState:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        code, txn = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    else:
        code, txn = transactions(ctx).describe(transactional_id)
    if txn is None:
        return TransactionState(
            error_code=code,
            transactional_id=transactional_id,
            transaction_state="",
            # zeros, as Kafka answers an id it cannot describe (its schema's defaults)
            transaction_timeout_ms=0,
            transaction_start_time_ms=0,
            producer_id=0,
            producer_epoch=0,
            topics=[],
        )
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return TransactionState(
        error_code=ErrorCode.NONE,
        transactional_id=transactional_id,
        transaction_state=txn.state.display_name,
        transaction_timeout_ms=txn.timeout_ms,
        transaction_start_time_ms=txn.start_ms,
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        topics=[TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()],
    )


@handler(
    ApiKey.DESCRIBE_TRANSACTIONS, "0", acl=(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID)
)
def handle_describe_transactions(
    ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        throttle_time_ms=0,
        transaction_states=[_state(ctx, t) for t in request.transactional_ids],
    )


@error_response(ApiKey.DESCRIBE_TRANSACTIONS)
def describe_transactions_error(
    request: DescribeTransactionsRequest, code: ErrorCode, message: str | None
) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        transaction_states=[
            TransactionState(
                error_code=code,
                transactional_id=t,
                transaction_state="",
                transaction_timeout_ms=0,
                transaction_start_time_ms=0,
                producer_id=0,
                producer_epoch=0,
                topics=[],
            )
            for t in request.transactional_ids
        ]
    )
