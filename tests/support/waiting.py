"""Waiting for a condition in tests that drive real processes (never a timed assertion: the
timeout is only how long to wait before calling it a failure)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], what: str = "condition", timeout: float = 60.0) -> T:
    """Polls ``predicate`` until it returns something true, and returns that; AssertionError
    naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
