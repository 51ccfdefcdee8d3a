"""A free TCP port for a process a test starts (a broker, ZooKeeper, Kafka) that takes its port
from its configuration. Binding port 0 picks one the kernel does not use at that moment; the
process binds it a moment later (a test's own sockets bind port 0 directly)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
