"""Fixtures every test directory may use (Apache Kafka itself as the reference, issue 15), and
how ``make test`` spreads the suite over two pytest-xdist workers (``--dist loadgroup``).

Each test file is one unit of work, so module fixtures start once; the tests that share an
expensive session fixture are kept on one worker (Kafka's JVMs, Spark's), and the tests that run
clusters of brokers under load are kept on one worker so that two of them never share the two
cores (they SIGKILL brokers and wait on timeouts meant for a machine they have to themselves).

The reference tests' summary lines (tests/support/reference_summary.py) are printed at the end of
the run by the controller, gathered from the workers under pytest-xdist.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.reference_fixtures import (
    java_scenarios,
    kafka_kraft,
    kafka_reference,
    odradek_zk,
    reference_zookeeper,
)
from tests.support.reference_summary import SECTION, collect_worker_lines, summary_lines

__all__ = ["java_scenarios", "kafka_kraft", "kafka_reference", "odradek_zk", "reference_zookeeper"]

#: fixtures that start Apache Kafka (or compile its clients' scenarios), once per worker
_KAFKA_FIXTURES = frozenset(__all__)
#: test files that run several brokers with faults and load: one at a time
_CLUSTER_FILES = frozenset(
    {
        "test_replication.py",
        "test_replication_admin.py",
        "test_cli_replication.py",
        "test_transactions.py",
        "test_transactions_cluster.py",
        "test_transactions_failover.py",
        "test_consumer_groups.py",
        "test_consumer_groups_cluster.py",
        "test_groups_cluster.py",
        "test_security_cluster.py",
        "test_zookeeper_brokers.py",
        "test_quotas.py",
        "test_log_dir_failure.py",
        "test_dynamic_config_cluster.py",
        "test_runbook.py",
    }
)


def _group(item: pytest.Item) -> str:
    if _KAFKA_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return "kafka"
    name = item.path.name
    if name.startswith("test_spark_"):
        return "spark"
    if name in _CLUSTER_FILES:
        return "cluster"
    return str(item.path.relative_to(item.config.rootpath))


#: the longest units first (``make test`` passes ``--no-loadscope-reorder``, so workers take
#: units in this order): the cluster tests on one worker from the start, Kafka's on the other
_FIRST = {"cluster": 0, "kafka": 1, "spark": 2}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The xdist group of every test (see the module's docstring), which pytest-xdist makes
    the test's scheduling unit under ``--dist loadgroup`` (and ignores otherwise); the long
    groups first."""
    groups = {}
    for item in items:
        groups[item] = group = _group(item)
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _FIRST.get(groups[item], len(_FIRST)))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's controller: a worker finished; its reference summary lines (the
    differential corpus's count) join the controller's, which prints them below."""
    collect_worker_lines(node.config, getattr(node, "workeroutput", None))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The lines the reference tests asked for (tests/support/reference_summary.py), with or
    without pytest-xdist."""
    lines = summary_lines(terminalreporter.config)
    if lines:
        terminalreporter.section(SECTION)
        for line in lines:
            terminalreporter.write_line(line)
