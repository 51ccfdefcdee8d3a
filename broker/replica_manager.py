"""Partitions this broker hosts (placeholder until storage lands)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ReplicaManager:
    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def startup(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def periodic_jobs(self) -> list[tuple[int, Callable[[], None], str]]:
        return []
