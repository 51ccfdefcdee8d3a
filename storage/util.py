"""Small things the storage modules share: Java's integer limits and the wall clock.

Kafka's formats use 32-bit relative offsets, positions and sequence numbers (``INT32_MAX``) and
Java ``long`` settings (``LONG_MAX`` means "never" for ``flush.ms`` and friends). Storage may read
the clock (``protocol`` may not); classes take a ``clock`` so tests can pass their own.
"""

from __future__ import annotations

import time
from typing import Final

#: Java's Integer.MAX_VALUE: the largest relative offset, position or sequence number.
INT32_MAX: Final = 2**31 - 1
#: Java's Long.MAX_VALUE.
LONG_MAX: Final = 2**63 - 1


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (the default ``clock``)."""
    return time.time_ns() // 1_000_000
