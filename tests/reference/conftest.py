"""Apache Kafka as the reference: the differential test's summary line at the end of the run."""

from __future__ import annotations

import pytest

#: Lines the reference tests want shown in pytest's terminal summary.
SUMMARY: pytest.StashKey[list[str]] = pytest.StashKey()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = terminalreporter.config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("Apache Kafka as the reference")
        for line in lines:
            terminalreporter.write_line(line)
