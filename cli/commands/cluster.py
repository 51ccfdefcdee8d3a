"""``odradek cluster describe|brokers|controller``: the cluster id, its brokers and its
controller, from DescribeCluster (or Metadata where a broker lacks it)."""

from __future__ import annotations

from typing import Any

import click

from cli.client import AdminClient
from cli.options import with_client
from cli.output import emit, format_option


def _brokers(client: AdminClient) -> tuple[str | None, int, list[dict[str, Any]]]:
    body = client.describe_cluster()
    if body is not None:
        cluster_id, controller = body.cluster_id, body.controller_id
        brokers = [(b.broker_id, b.host, b.port, b.rack) for b in body.brokers]
    else:
        md = client.metadata([])
        cluster_id, controller = md.cluster_id, md.controller_id
        brokers = [(b.node_id, b.host, b.port, b.rack) for b in md.brokers.values()]
    rows = [
        {"id": i, "host": h, "port": p, "rack": r, "controller": i == controller}
        for i, h, p, r in sorted(brokers)
    ]
    return cluster_id, controller, rows


@click.group()
def cluster() -> None:
    """The cluster: its id, brokers and controller."""


@cluster.command("describe")
@format_option()
@with_client
def describe(client: AdminClient, fmt: str) -> None:
    """Cluster id, controller, brokers and topic count."""
    cluster_id, controller, rows = _brokers(client)
    topics = client.metadata(None).topics
    emit(
        {
            "cluster_id": cluster_id,
            "controller": controller,
            "brokers": [r["id"] for r in rows],
            "topics": len(topics),
            "partitions": sum(len(t.partitions) for t in topics.values()),
        },
        fmt,
    )


@cluster.command("brokers")
@format_option()
@with_client
def brokers(client: AdminClient, fmt: str) -> None:
    """The live brokers and their advertised addresses."""
    _, _, rows = _brokers(client)
    emit(
        rows,
        fmt,
        [
            ("ID", "id"),
            ("HOST", "host"),
            ("PORT", "port"),
            ("RACK", "rack"),
            ("CONTROLLER", "controller"),
        ],
    )


@cluster.command("controller")
@format_option()
@with_client
def controller(client: AdminClient, fmt: str) -> None:
    """The controller broker."""
    _, controller_id, rows = _brokers(client)
    found = next((r for r in rows if r["id"] == controller_id), None)
    emit(found or {"id": controller_id, "host": None, "port": None}, fmt)
