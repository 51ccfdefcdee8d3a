"""Reading a broker's Prometheus endpoint (``metrics.port``) in tests."""

from __future__ import annotations

import urllib.request


def scrape(port: int, host: str = "127.0.0.1") -> dict[str, float]:
    """Every sample of ``/metrics``: name with labels -> value."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out
