"""Writes docs/configuration.md from broker/config.py's tables.

Run: python scripts/gen_config_docs.py

tests/unit/broker/test_config.py checks the file is up to date, so the reference stays true.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker.config import BROKER_CONFIGS, TOPIC_CONFIGS, format_value

OUT = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def render() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Odradek reads Kafka's `server.properties` keys:",
        "`odradek serve --config server.properties [--override KEY=VALUE ...]`.",
        "With no configuration at all it is a standalone broker on `127.0.0.1:9092`",
        "with its data in `./data`. Unknown keys are reported in the log at start-up;",
        "keys marked *inert* are accepted (so Kafka configs work unchanged) but have no effect.",
        "",
        "This file is generated from `broker/config.py` by `scripts/gen_config_docs.py`.",
        "",
        "## Broker",
        "",
        "| key | type | default | notes |",
        "|---|---|---|---|",
    ]
    for name, key in sorted(BROKER_CONFIGS.items()):
        default = format_value(key.kind, key.default)
        notes = key.doc
        if not key.implemented:
            notes = ("*inert*. " + notes).strip()
        lines.append(f"| `{name}` | {key.kind} | `{default}` | {notes} |")
    lines += [
        "",
        "## Per listener and per SASL mechanism",
        "",
        "As in Kafka, every `ssl.*` and `sasl.*` key above (and `connections.max.reauth.ms`) may",
        "be set for one listener with the prefix `listener.name.<listener name in lower case>.`;",
        "`sasl.jaas.config` and `connections.max.reauth.ms` may also be set for one SASL",
        "mechanism of a listener: `listener.name.<listener>.<mechanism in lower case>.<key>`.",
        "The most specific setting wins (listener and mechanism, listener, broker key).",
        "`max.connections` and `max.connection.creation.rate` may be set per listener too",
        "(`listener.name.<listener>.max.connections`): a listener's own limits, which apply",
        "beside the broker-wide ones (docs/security.md, Connections). These two are dynamic, as",
        "in Kafka: `odradek config set` (IncrementalAlterConfigs) changes them for one broker or",
        "cluster-wide, over server.properties' value.",
        "For example:",
        "",
        "```properties",
        "listener.name.sasl_ssl.ssl.keystore.location=/etc/odradek/broker.pem",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=\\",
        "  org.apache.kafka.common.security.scram.ScramLoginModule required \\",
        '  username="admin" password="admin-secret";',
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=\\",
        "  org.apache.kafka.common.security.plain.PlainLoginModule required \\",
        '  username="admin" password="admin-secret" \\',
        '  user_admin="admin-secret" user_alice="alice-secret";',
        "```",
        "",
        "Values of `password` keys (JAAS configs, key and keystore passwords, inline PEM keys) are",
        "never logged and are reported as sensitive (no value) by DescribeConfigs.",
        "See [security.md](security.md) for how the pieces fit.",
        "",
        "## Topic",
        "",
        "Set per topic with CreateTopics, AlterConfigs or IncrementalAlterConfigs;",
        "the default comes from the broker key in the third column.",
        "",
        "| key | type | broker default key | default |",
        "|---|---|---|---|",
    ]
    for name, key in sorted(TOPIC_CONFIGS.items()):
        broker_key = f"`{key.broker_key}`" if key.broker_key else ""
        lines.append(
            f"| `{name}` | {key.kind} | {broker_key} | `{format_value(key.kind, key.default)}` |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
