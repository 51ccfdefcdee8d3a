"""Feature versioning (KIP-584) as a Kafka user drives it: Kafka's own ``kafka-features`` tool
(4.x) describes, upgrades and downgrades ``transaction.version`` on a standalone broker, and the
level holds across a restart. UpdateFeatures' answers themselves are compared with Kafka's by the
differential corpus (``update_features/*``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", {}, log_path=tmp_path / "broker.log")
    proc.start()
    yield proc
    proc.stop()


def test_kafka_features_tool_upgrades_and_downgrades(broker: BrokerProcess) -> None:
    from tests.support.kafka_reference import kraft_version, run_tool, tool_class

    version = kraft_version()
    tool = tool_class(version, "kafka-features")

    def features(*args: str, check: bool = True) -> str:
        out = run_tool(version, tool, "--bootstrap-server", broker.bootstrap, *args, check=check)
        return out.stdout

    def described() -> tuple[int, int]:
        line = features("describe").strip()
        found = re.fullmatch(
            r"Feature: transaction\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 2"
            r"\s+FinalizedVersionLevel: (\d+)\s+Epoch: (\d+)",
            line,
        )
        assert found, line
        return int(found[1]), int(found[2])

    # a new cluster: the level of transaction.version in the configuration (2), epoch 0
    assert described() == (2, 0)
    assert features("downgrade", "--feature", "transaction.version=1").strip() == (
        "transaction.version was downgraded to 1."
    )
    assert described() == (1, 1)
    refused = features("upgrade", "--feature", "transaction.version=3", check=False)
    assert "Local controller 0 only supports versions 0-2" in refused
    assert features("upgrade", "--feature", "transaction.version=2", "--dry-run").strip() == (
        "transaction.version can be upgraded to 2."
    )
    assert described() == (1, 1)
    broker.stop()
    broker.start()
    assert described() == (1, 1)  # kept in the metadata store
    assert features("upgrade", "--feature", "transaction.version=2").strip() == (
        "transaction.version was upgraded to 2."
    )
    assert described() == (2, 2)
