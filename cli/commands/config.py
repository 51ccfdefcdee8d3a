"""``odradek config describe|set|delete``: broker (one broker, or the cluster-wide default),
topic and broker-logger configs (what ``kafka-configs`` does), through DescribeConfigs and
IncrementalAlterConfigs. Sources are named as Kafka's admin client names them
(``DYNAMIC_BROKER_CONFIG``, ``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``STATIC_BROKER_CONFIG``,
``DEFAULT_CONFIG``...)."""

from __future__ import annotations

from typing import Any

import click

from cli.client import AdminClient
from cli.options import with_client
from cli.output import emit, format_option

#: ConfigResource types (Kafka's ``ConfigResource.Type``)
TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

#: DescribeConfigs config_source codes -> the names Kafka's admin client gives them
SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}


def parse_pairs(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def describe_entries(
    client: AdminClient,
    resource_type: int,
    name: str,
    keys: list[str] | None,
    *,
    node: int | None = None,
) -> list[dict[str, Any]]:
    entries = client.describe_configs(resource_type, name, keys, node=node)
    return [
        {
            "name": e.name,
            "value": e.value,
            "source": SOURCES.get(e.config_source, str(e.config_source)),
            "read_only": e.read_only,
            "sensitive": e.is_sensitive,
            "synonyms": [
                {"name": s.name, "value": s.value, "source": SOURCES.get(s.source, str(s.source))}
                for s in e.synonyms
            ],
        }
        for e in sorted(entries, key=lambda e: e.name)
    ]


def _target(
    broker: int | None, broker_default: bool, topic: str | None, broker_logger: int | None
) -> tuple[int, str, int | None]:
    """(resource type, resource name, the broker to ask) of the one target given."""
    given = [broker is not None, broker_default, topic is not None, broker_logger is not None]
    if sum(given) != 1:
        raise click.UsageError(
            "name exactly one of --broker ID, --broker-default, --topic NAME, --broker-logger ID"
        )
    if broker is not None:
        return BROKER, str(broker), broker
    if broker_default:
        return BROKER, "", None
    if topic is not None:
        return TOPIC, topic, None
    assert broker_logger is not None
    return BROKER_LOGGER, str(broker_logger), broker_logger


def _targets(fn: Any) -> Any:
    for option in reversed(
        [
            click.option("--broker", type=int, metavar="ID", help="one broker's configs"),
            click.option(
                "--broker-default",
                is_flag=True,
                help="the cluster-wide default of every broker (Kafka's <default> entity)",
            ),
            click.option("--topic", metavar="NAME", help="a topic's configs"),
            click.option(
                "--broker-logger", type=int, metavar="ID", help="one broker's logger levels"
            ),
        ]
    ):
        fn = option(fn)
    return fn


@click.group()
def config() -> None:
    """Broker, cluster-default, topic and logger configs; changed without restarts."""


@config.command("describe")
@_targets
@click.argument("keys", nargs=-1)
@click.option("--changed", is_flag=True, help="only configs not at their default")
@format_option()
@with_client
def describe(
    client: AdminClient,
    broker: int | None,
    broker_default: bool,
    topic: str | None,
    broker_logger: int | None,
    keys: tuple[str, ...],
    changed: bool,
    fmt: str,
) -> None:
    """Configs of one target, with their values, sources and synonyms (KEYS: only these)."""
    rtype, name, node = _target(broker, broker_default, topic, broker_logger)
    rows = describe_entries(client, rtype, name, list(keys) or None, node=node)
    if changed:
        rows = [r for r in rows if r["source"] != "DEFAULT_CONFIG"]
    emit(
        rows,
        fmt,
        [("NAME", "name"), ("VALUE", "value"), ("SOURCE", "source"), ("READ-ONLY", "read_only")],
        empty="no configs",
    )


def _alter(
    client: AdminClient,
    target: tuple[int, str, int | None],
    ops: list[tuple[str, int, str | None]],
    validate_only: bool,
) -> None:
    rtype, name, node = target
    client.incremental_alter_configs(rtype, name, ops, node=node, validate_only=validate_only)


def _describe_target(rtype: int, name: str) -> str:
    if rtype == TOPIC:
        return f"topic {name}"
    if rtype == BROKER_LOGGER:
        return f"loggers of broker {name}"
    return f"broker {name}" if name else "the cluster-wide broker default"


@config.command("set")
@_targets
@click.argument("settings", nargs=-1, required=True, metavar="KEY=VALUE...")
@click.option("--validate-only", is_flag=True, help="check the change, apply nothing")
@with_client
def set_(
    client: AdminClient,
    broker: int | None,
    broker_default: bool,
    topic: str | None,
    broker_logger: int | None,
    settings: tuple[str, ...],
    validate_only: bool,
) -> None:
    """Set configs of one target (dynamic broker configs apply without a restart)."""
    target = _target(broker, broker_default, topic, broker_logger)
    ops: list[tuple[str, int, str | None]] = [(k, 0, v) for k, v in parse_pairs(settings).items()]
    _alter(client, target, ops, validate_only)
    verb = "Validated" if validate_only else "Updated"
    click.echo(f"{verb} {', '.join(k for k, _, _ in ops)} of {_describe_target(*target[:2])}")


@config.command("delete")
@_targets
@click.argument("keys", nargs=-1, required=True, metavar="KEY...")
@with_client
def delete(
    client: AdminClient,
    broker: int | None,
    broker_default: bool,
    topic: str | None,
    broker_logger: int | None,
    keys: tuple[str, ...],
) -> None:
    """Remove configs of one target (they fall back to the next source: cluster default,
    server.properties, Kafka's default)."""
    target = _target(broker, broker_default, topic, broker_logger)
    _alter(client, target, [(k, 1, None) for k in keys], False)
    click.echo(f"Deleted {', '.join(keys)} of {_describe_target(*target[:2])}")
