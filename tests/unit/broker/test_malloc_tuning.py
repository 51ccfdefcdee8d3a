"""The broker process's allocator thresholds (see broker.malloc_tuning), in child processes: a
process's malloc settings cannot be undone, and the test process must keep glibc's defaults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# Allocates a fetch's worth of 16 KiB buffers (as a fetch of 3,200 partitions holds them), frees
# them, and counts the page faults of doing it again.
CHILD = """
import resource, sys
from broker import malloc_tuning
applied = malloc_tuning.configure() if sys.argv[1] == "tuned" else None
def fetch():
    held = [bytes(16384) for _ in range(3200)]
    del held
fetch()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
fetch()
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _child(mode: str, **env: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], int(out[1])


glibc = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and (os.confstr("CS_GNU_LIBC_VERSION") or "")),
    reason="glibc's mallopt",
)


@glibc
def test_a_second_large_fetch_reuses_the_memory_of_the_first():
    applied, faults = _child("tuned")
    assert applied == "True"
    # 50 MiB is 12,800 pages: with the defaults the heap is trimmed and every page faults again
    assert faults < 1000
    _, untuned = _child("default")
    assert untuned > 10_000


@glibc
def test_the_environment_wins():
    applied, faults = _child("tuned", MALLOC_TRIM_THRESHOLD_="131072")
    assert applied == "False"
    assert faults > 10_000
