"""Reading a broker's HTTP endpoint (``metrics.port``: ``/metrics``, ``/health``, ``/ready``) in
tests."""

from __future__ import annotations

import urllib.error
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


def http(url: str) -> tuple[int, str]:
    """(status, body) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def http_or_refused(url: str) -> tuple[int | None, str]:
    """:func:`http`, or (None, why) while nothing listens on the port."""
    try:
        return http(url)
    except (urllib.error.URLError, ConnectionError) as e:
        return None, str(e)
