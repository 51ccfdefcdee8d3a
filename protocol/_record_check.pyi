from typing import Any

def check_records(
    data: Any, count: int, require_key: bool, ts_lo: int, ts_hi: int
) -> tuple[int, int, str] | None: ...
