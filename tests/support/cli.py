"""The ``odradek`` command line as the tests drive it: a subprocess of the installed entry
point, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

ODRADEK = str(Path(sys.executable).parent / "odradek")


def odradek(
    *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [ODRADEK, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="200"),
    )
    if check:
        assert result.returncode == 0, (
            f"odradek {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def as_json(*args: str, stdin: str | None = None) -> Any:
    return json.loads(odradek(*args, "--format", "json", stdin=stdin).stdout)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pairs(text: str) -> dict[str, str]:
    """A single object's KEY VALUE lines."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            key, _, value = line.strip().partition(" ")
            out[key] = value.strip()
    return out


def rows(text: str) -> tuple[list[str], list[list[str]]]:
    """A table's header and rows, each split on spaces."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return lines[0], lines[1:]
