"""Lines the reference tests (issue 15) want shown at the end of the run, such as the
differential corpus's "N scenarios, M identical, K allowed differences".

A test calls :func:`add_summary_line`; tests/conftest.py prints the lines in pytest's terminal
summary. Under pytest-xdist (``make test``) a test runs in a worker, whose terminal summary
nobody sees: the worker also puts its lines in ``config.workeroutput``, which pytest-xdist hands
to the controller when the worker finishes, and the controller's ``pytest_testnodedown`` adds
them to its own list (:func:`collect_worker_lines`).
"""

from __future__ import annotations

from typing import Any

import pytest

#: The lines, in this process's config (the controller's, or the only process without xdist).
SUMMARY: pytest.StashKey[list[str]] = pytest.StashKey()
#: The key under which a worker hands its lines to the controller.
WORKER_OUTPUT_KEY = "odradek_reference_summary"
SECTION = "Apache Kafka as the reference"


def add_summary_line(config: pytest.Config, line: str) -> None:
    config.stash.setdefault(SUMMARY, []).append(line)
    workeroutput: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # sent to the controller when the worker finishes (pytest-xdist's workeroutput)
        workeroutput.setdefault(WORKER_OUTPUT_KEY, []).append(line)


def collect_worker_lines(config: pytest.Config, workeroutput: dict[str, Any] | None) -> None:
    """On the controller: a finished worker's lines join the controller's."""
    lines = (workeroutput or {}).get(WORKER_OUTPUT_KEY, [])
    config.stash.setdefault(SUMMARY, []).extend(str(line) for line in lines)


def summary_lines(config: pytest.Config) -> list[str]:
    return list(config.stash.get(SUMMARY, []))
