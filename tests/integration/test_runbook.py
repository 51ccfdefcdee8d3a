"""docs/operations.md stays true: every ``odradek`` command it shows runs, in order, against a
real broker (``HOST:PORT`` is its address, ``DATA`` its log directory; ``odradek serve`` is
what the fixture runs), in a working directory of its own, where ``> FILE`` writes the output.

One broker cannot show what needs several (a preferred leader elsewhere, data moving between
brokers): there the runbook's elections are not needed and its reassignment plan keeps the
replicas where they are; tests/integration/test_cli_replication.py runs those commands against
three brokers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.integration.broker_process import BrokerProcess
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
ODRADEK = str(Path(sys.executable).parent / "odradek")


def runbook_commands() -> list[str]:
    text = (ROOT / "docs" / "operations.md").read_text()
    return [line.strip() for line in text.splitlines() if line.startswith("    odradek ")]


def test_every_runbook_command_runs(tmp_path: Path) -> None:
    commands = runbook_commands()
    assert len(commands) >= 15
    assert commands[0].startswith("odradek serve ")
    data = tmp_path / "data"
    proc = BrokerProcess(
        data,
        {
            "metrics.port": str(free_port()),
            # two log dirs (DATA and DATA-2) to move a partition between; the ACL authorizer
            # for the security commands (this anonymous listener is a super user)
            "log.dirs": f"{data},{data}-2",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
        },
    ).start()
    try:
        (tmp_path / "orders.txt").write_text("a\nb\nc\n")
        for command in commands[1:]:
            if command.startswith("odradek check-log"):
                proc.stop()
            line = command.replace("HOST:PORT", proc.bootstrap).replace("DATA", str(proc.data_dir))
            line, redirect, output = line.partition(" > ")
            args = line.split()[1:]
            result = subprocess.run(
                [ODRADEK, *args],
                capture_output=True,
                text=True,
                timeout=120,
                env=dict(os.environ),
                cwd=tmp_path,
            )
            assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
            if redirect:
                (tmp_path / output.strip()).write_text(result.stdout)
            if command.startswith("odradek group lag"):
                assert "billing" in result.stdout or "no committed offsets" in result.stdout
            if command.startswith("odradek check-log"):
                proc.start()
    finally:
        proc.stop()
