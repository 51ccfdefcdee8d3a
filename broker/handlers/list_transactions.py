"""ListTransactions (KIP-664): the transactional ids this broker coordinates, filtered by state
(Kafka's names; unknown names are echoed in ``unknown_state_filters``) and producer id; v1 adds
a duration filter (KIP-994: only transactions open longer than it), v2 a transactional id
pattern (KIP-1152: RE2 syntax, as Kafka's RE2/J, matching the whole id; empty or null: any). A
pattern RE2 refuses answers INVALID_REGULAR_EXPRESSION with nothing listed, before the state
filters are looked at, as Kafka does."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._txn import transactions
from broker.registry import error_response, handler
from coordination.regex import InvalidRegex, compile_re2
from coordination.txn.metadata import TxnState
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_transactions import (
    ListedTransactionState,
    ListTransactionsRequest,
    ListTransactionsResponse,
)


@handler(
    ApiKey.LIST_TRANSACTIONS, "0-2", acl=(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID)
)
def handle_list_transactions(
    ctx: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    pattern = request.transactional_id_pattern if ctx.api_version >= 2 else None
    if pattern:
        try:
            compile_re2(pattern)
        except InvalidRegex:
            return ListTransactionsResponse(
                throttle_time_ms=0,
                error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                unknown_state_filters=[],
                transaction_states=[],
            )
    unknown = [s for s in request.state_filters if TxnState.by_name(s) is None]
    known = [s for s in request.state_filters if TxnState.by_name(s) is not None]
    if unknown and not known:
        return ListTransactionsResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            unknown_state_filters=unknown,
            transaction_states=[],
        )
    code, txns = transactions(ctx).list_transactions(
        states=known,
        producer_ids=request.producer_id_filters,
        duration_filter_ms=request.duration_filter if ctx.api_version >= 1 else -1,
        transactional_id_pattern=pattern,
    )
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=code,
        unknown_state_filters=unknown,
        transaction_states=[
            ListedTransactionState(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state.display_name,
            )
            for t in txns
            # only the transactional ids the principal may describe (Kafka's rule)
            if ctx.authorize(
                AclOperation.DESCRIBE,
                ResourceType.TRANSACTIONAL_ID,
                t.transactional_id,
                log_denied=False,
            )
        ],
    )


@error_response(ApiKey.LIST_TRANSACTIONS)
def list_transactions_error(
    request: ListTransactionsRequest, code: ErrorCode, message: str | None
) -> ListTransactionsResponse:
    return ListTransactionsResponse(
        error_code=code, unknown_state_filters=[], transaction_states=[]
    )
