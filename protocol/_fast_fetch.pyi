from collections.abc import Sequence
from typing import Any

INLINE_RECORDS_MAX: int

def encode(
    version: int,
    throttle_time_ms: int,
    error_code: int,
    session_id: int,
    topics: Sequence[tuple[Any, Sequence[tuple[Any, ...]]]],
) -> list[Any] | None: ...
