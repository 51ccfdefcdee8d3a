"""What the group and offset handlers share."""

from __future__ import annotations

from broker.dispatch import RequestContext
from coordination.group.coordinator import GroupCoordinator


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    """The broker's group coordinator."""
    return ctx.services.groups.coordinator


def client_host(ctx: RequestContext) -> str:
    """Kafka's member ``clientHost``: "/" and the peer's address."""
    return f"/{ctx.session.client_host}"
