"""Fixtures that run the real daemon. ``broker`` is shared by a whole test session (tests use
unique topic names); ``fresh_broker`` is a new broker per test, for restarts and special configs;
``small_tmpfs`` is a small real file system to fill. A test's ``record_property(SUMMARY_PROPERTY,
line)`` shows ``line`` in the run's terminal summary (also from pytest-xdist workers: the
property travels with the test's report)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.support.missing import skip_or_fail
from tests.support.zookeeper import ZooKeeperServer, require_zookeeper

#: the name of a test property whose value is shown in the run's terminal summary
SUMMARY_PROPERTY = "summary"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = [
        str(value)
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == SUMMARY_PROPERTY
    ]
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("broker") / "data"
    proc = BrokerProcess(
        data,
        {
            "message.max.bytes": str(12 * 1024 * 1024),
            "socket.request.max.bytes": str(64 * 1024 * 1024),
        },
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def make(**overrides: str) -> BrokerProcess:
        proc = BrokerProcess(tmp_path / f"data-{len(started)}", overrides)
        started.append(proc)
        return proc.start()

    yield make
    for proc in started:
        proc.stop()


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 MB tmpfs, for a log dir that fills up (mount needs root, as CI has; skipped
    where mount is refused, failed under CI). Request it before the brokers that use it, so
    that they stop before it is unmounted."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        # CI runs as root: a refused mount there is a broken set-up
        skip_or_fail(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    safe = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"{safe}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper (Debian's package) on a free loopback port, one per test module."""
    require_zookeeper()
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), tick_time_ms=200)
    server.start()
    yield server
    server.stop()
