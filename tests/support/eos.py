"""The exactly-once copy loop (tests/clients/eos/copy_loop.py) as the EOS tests start it: its own
process, its stderr (progress lines, client errors, librdkafka debug with
``ODRADEK_WORKER_DEBUG``) appended to a log file the test prints when it fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "tests" / "clients" / "eos" / "copy_loop.py"
#: the smallest session the broker allows: a restarted loop waits that long for the group to
#: drop the predecessor a kill left behind
SESSION_TIMEOUT_MS = 6000
#: records per transaction: small transactions keep the copy going long enough for the kills to
#: land in it (and put more transaction boundaries in their way)
BATCH = 20


def start_copy_loop(
    bootstrap: str,
    source: str,
    sink: str,
    *,
    group: str,
    transactional_id: str,
    total: int,
    log: Path,
) -> subprocess.Popen[Any]:
    """One instance of the loop, copying ``total`` records from ``source`` to ``sink``."""
    argv = [bootstrap, source, sink, group, transactional_id, str(total)]
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(LOOP), *argv, str(SESSION_TIMEOUT_MS), str(BATCH)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )


def log_tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
