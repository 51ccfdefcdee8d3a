"""What the transaction handlers share: the coordinator, Kafka's per-version error mapping, and
answering once the coordinator's callback arrives (:func:`~broker.handlers._groups.respond`)."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.handlers._groups import respond
from coordination.errors import KafkaApiError
from coordination.txn.coordinator import TransactionCoordinator
from protocol.error_codes import ErrorCode


def transactions(ctx: RequestContext) -> TransactionCoordinator:
    """The broker's transaction coordinator (COORDINATOR_NOT_AVAILABLE without one)."""
    service = ctx.services.transactions
    if service is None:
        raise KafkaApiError("no transaction coordinator", ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return service.coordinator


def fenced_for(code: ErrorCode, version: int, first_version: int) -> ErrorCode:
    """PRODUCER_FENCED for request versions that know it (``first_version`` on), else
    INVALID_PRODUCER_EPOCH, as Kafka answers older clients."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def abortable_for(code: ErrorCode, version: int, first_version: int) -> ErrorCode:
    """TRANSACTION_ABORTABLE only for versions that know it; INVALID_TXN_STATE before."""
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < first_version:
        return ErrorCode.INVALID_TXN_STATE
    return code


__all__ = ["abortable_for", "fenced_for", "respond", "transactions"]
