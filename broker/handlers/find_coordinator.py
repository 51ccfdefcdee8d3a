"""FindCoordinator: which broker coordinates a group (v4+: several groups per request).

A group's coordinator leads its ``__consumer_offsets`` partition, a transactional id's (key type
1) its ``__transaction_state`` partition; each topic is created when first needed, off the
processor loop (a metadata-store write: in a cluster, ZooKeeper round trips and a wait for the
topic to come back), the answer following the creation. Share-group keys are answered with an
error.
"""

from __future__ import annotations

from broker.coordinators.groups import GroupService
from broker.coordinators.internal_topic import CoordinatorNode
from broker.coordinators.transactions import TransactionService
from broker.dispatch import Later, RequestContext
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.find_coordinator import (
    KEY_TYPE_GROUP,
    KEY_TYPE_SHARE,
    KEY_TYPE_TRANSACTION,
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)


def _find(ctx: RequestContext, key_type: int, key: str) -> CoordinatorNode:
    """The coordinator of ``key``; DESCRIBE on the group (or transactional id) is needed."""
    if key_type == KEY_TYPE_GROUP and not ctx.authorize(
        AclOperation.DESCRIBE, ResourceType.GROUP, key
    ):
        return CoordinatorNode(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if key_type == KEY_TYPE_TRANSACTION and not ctx.authorize(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return CoordinatorNode(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if key_type == KEY_TYPE_GROUP:
        return ctx.services.groups.find(key, ctx.listener)
    if key_type == KEY_TYPE_TRANSACTION:
        transactions = ctx.services.transactions
        if transactions is None:
            return CoordinatorNode(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return transactions.find(key, ctx.listener)
    if key_type == KEY_TYPE_SHARE:
        return CoordinatorNode(
            ErrorCode.INVALID_REQUEST, message="share groups are not supported by this broker"
        )
    return CoordinatorNode(ErrorCode.INVALID_REQUEST, message=f"unknown key type {key_type}")


def _error_message(node: CoordinatorNode, version: int) -> str | None:
    """The node's message, else the error code's own. Without an error, Kafka answers v1-3 with
    the error's name ("NONE") and v4+ coordinators with no message."""
    if node.message is not None:
        return node.message
    if node.error == ErrorCode.NONE:
        return "NONE" if version < 4 else None
    return node.error.message


def _topic_missing(ctx: RequestContext, key_type: int) -> bool:
    """Whether answering needs the key type's internal topic created first."""
    services = ctx.services
    service: GroupService | TransactionService | None
    if key_type == KEY_TYPE_GROUP:
        service = services.groups
    elif key_type == KEY_TYPE_TRANSACTION:
        service = services.transactions
    else:
        return False
    if service is None:
        return False
    return service.topic.topic not in services.metadata.view.topics


@handler(ApiKey.FIND_COORDINATOR, "0-6", acl=(AclOperation.DESCRIBE, ResourceType.GROUP))
def handle_find_coordinator(
    ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse | Later:
    key_type = request.key_type if ctx.api_version >= 1 else KEY_TYPE_GROUP
    if _topic_missing(ctx, key_type):
        return Later(ctx.run_blocking(_answer, ctx, request))
    return _answer(ctx, request)


def _answer(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.api_version
    key_type = request.key_type if version >= 1 else KEY_TYPE_GROUP
    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            node = _find(ctx, key_type, key)
            coordinators.append(
                Coordinator(
                    key=key,
                    node_id=node.node_id,
                    host=node.host,
                    port=node.port,
                    error_code=node.error,
                    error_message=_error_message(node, version),
                )
            )
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    node = _find(ctx, key_type, request.key)
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=node.error,
        error_message=_error_message(node, version),
        node_id=node.node_id,
        host=node.host,
        port=node.port,
    )


@error_response(ApiKey.FIND_COORDINATOR)
def find_coordinator_error(
    request: FindCoordinatorRequest, code: ErrorCode, message: str | None
) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(
        error_code=code,
        error_message=message,
        node_id=-1,
        host="",
        port=-1,
        coordinators=[
            Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=message)
            for k in (request.coordinator_keys or [])
        ],
    )
