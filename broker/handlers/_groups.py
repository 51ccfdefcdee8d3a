"""What the group, offset and transaction handlers share: the coordinator, the client's host,
and answering once a coordinator's callback arrives."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from coordination.group.coordinator import GroupCoordinator

T = TypeVar("T")
R = TypeVar("R")


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    """The broker's group coordinator."""
    return ctx.services.groups.coordinator


def client_host(ctx: RequestContext) -> str:
    """Kafka's member ``clientHost``: "/" and the peer's address."""
    return f"/{ctx.session.client_host}"


def respond(answer: Answer[T], build: Callable[[T], R]) -> R | Later:
    """``build(value)`` now if the answer is there, else later (the dispatcher awaits it)."""
    if answer.ready:
        return build(answer.value)  # type: ignore[arg-type]

    async def later() -> R:
        return build(await answer.wait())

    return Later(later())
