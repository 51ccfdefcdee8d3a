"""Kafka's own Java client against Odradek (issue 15): kafka-clients 3.9.x and the newest 4.x run
the scenarios of tests/reference/java/ClientScenarios.java (idempotent producers with every
codec, a group consumer, eager and cooperative-sticky rebalances, the admin client's everyday
calls, transactions (commit and abort with a read_committed consumer, a zombie fenced by a
second producer with its transactional id, consume-transform-produce with
sendOffsetsToTransaction), KIP-848 groups) against Odradek, and the same against Apache Kafka as
a sanity check of the scenarios themselves (3.9 in ZooKeeper mode for the 3.9 client, 4.x KRaft
for the 4.x client). The 4.x client also runs java/v4/Kip848Scenarios.java (issue 19): KIP-848
members joining and leaving during consumption, describeConsumerGroups, a regex subscription.

One JVM per (client, broker) runs every scenario; each test reads its scenario's line.
Features Odradek does not have yet are expected failures naming their issue (strict: they must
start passing when it lands)."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka_reference import kraft_version, tool_command, zk_version

SCENARIOS = [
    "produce-consume",
    "groups-eager",
    "groups-cooperative",
    "admin",
    "transactions",
    "transactions-fencing",
    "transactions-eos",
    "consumer-protocol",
]

#: Scenarios of tests/reference/java/v4/ (the 4.0 client API: SubscriptionPattern, GroupState),
#: run by the 4.x client only: members coming and going while they consume, with the listener
#: logs checked (every record once, one owner per partition at a time, commits honoured);
#: describeConsumerGroups (ConsumerGroupDescribe) while they run; a broker-side regex
#: subscription picking up a topic created after the join.
FOUR_X_SCENARIOS = ["kip848-rebalance", "kip848-describe", "kip848-regex"]

#: Scenarios Odradek fails today, with the issue each waits for.
ODRADEK_PENDING: dict[str, str] = {}

_results: dict[tuple[str, str], dict[str, tuple[bool, str]]] = {}


def _run(version: str, classes: Path, bootstrap: str, target: str) -> dict[str, tuple[bool, str]]:
    key = (version, target)
    if key not in _results:
        prefix = f"java-{version.replace('.', '')}-{target}-{uuid.uuid4().hex[:6]}"
        scenarios = _scenarios(version)
        proc = subprocess.run(
            tool_command(
                version, "ClientScenarios", bootstrap, prefix, *scenarios, extra_cp=(classes,)
            ),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        found: dict[str, tuple[bool, str]] = {}
        for line in proc.stdout.splitlines():
            parts = line.split("\t", 3)
            if len(parts) == 4 and parts[0] == "RESULT":
                found[parts[1]] = (parts[2] == "OK", parts[3])
        if proc.returncode != 0 or set(found) != set(scenarios):
            raise AssertionError(
                f"ClientScenarios exited with {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr[-5000:]}"
            )
        _results[key] = found
    return _results[key]


def _scenarios(version: str) -> list[str]:
    return SCENARIOS + (FOUR_X_SCENARIOS if version == kraft_version() else [])


def _cases() -> list[Any]:
    cases = []
    for version in (zk_version(), kraft_version()):
        for target in ("odradek", "kafka"):
            for scenario in _scenarios(version):
                marks = []
                if target == "odradek" and scenario in ODRADEK_PENDING:
                    marks.append(pytest.mark.xfail(strict=True, reason=ODRADEK_PENDING[scenario]))
                cases.append(
                    pytest.param(
                        version, target, scenario, marks=marks, id=f"{version}-{target}-{scenario}"
                    )
                )
    return cases


@pytest.mark.parametrize(("version", "target", "scenario"), _cases())
def test_java_client(
    version: str,
    target: str,
    scenario: str,
    java_scenarios: dict[str, Path],
    request: pytest.FixtureRequest,
) -> None:
    if target == "kafka":
        if version == zk_version() and scenario == "consumer-protocol":
            pytest.skip(
                f"Kafka {version} in ZooKeeper mode has no KIP-848 groups; the {kraft_version()} "
                "client checks this scenario against KRaft"
            )
        fixture = "kafka_reference" if version == zk_version() else "kafka_kraft"
    else:
        fixture = "odradek_zk"
    bootstrap = request.getfixturevalue(fixture).bootstrap
    ok, detail = _run(version, java_scenarios[version], bootstrap, target)[scenario]
    assert ok, f"{scenario} with kafka-clients {version} against {target}: {detail}"
