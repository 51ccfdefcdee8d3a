"""CreateTopics and CreatePartitions answer once their partitions are usable (see
:mod:`broker.replication.delayed_create`)."""

from __future__ import annotations

from typing import Any, TypeVar

from broker.dispatch import Later, RequestContext
from protocol.error_codes import ErrorCode

R = TypeVar("R")


def answer_when_ready(
    ctx: RequestContext,
    response: R,
    topics: dict[str, int],
    timeout_ms: int,
    validate_only: bool,
) -> R | Later:
    """``response`` once every partition of ``topics`` has a leader here (Kafka's
    DelayedCreatePartitions); at once when there is nothing to wait for or no time to wait.
    Topics still not ready after ``timeout_ms`` answer REQUEST_TIMED_OUT."""
    replicas = ctx.services.replica_manager
    if validate_only or timeout_ms <= 0 or not topics or replicas.topics_ready(topics):
        return response

    async def later() -> R:
        late = await replicas.wait_for_topics(topics, timeout_ms)
        results: Any = getattr(response, "topics", None) or getattr(response, "results", [])
        for r in results:
            if r.name in late and r.error_code == ErrorCode.NONE:
                r.error_code = ErrorCode.REQUEST_TIMED_OUT
                r.error_message = f"Timed out waiting for the partitions of {r.name} to be ready."
        return response

    return Later(later())
