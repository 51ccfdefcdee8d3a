"""What the group and offset handlers share."""

from __future__ import annotations

from broker.coordinator_runtime import CoordinatorRuntime
from broker.dispatch import RequestContext


def runtime(ctx: RequestContext) -> CoordinatorRuntime:
    """The broker's coordinator runtime, typed."""
    return ctx.services.group_coordinator


def client_host(ctx: RequestContext) -> str:
    """Kafka's member ``clientHost``: "/" and the peer's address."""
    return f"/{ctx.session.client_host}"
