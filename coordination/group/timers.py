"""Deadlines that move (a member's session, its rebalance timeout...): one timer per key, and a
deadline pushed later re-arms nothing: the timer, when it fires before the deadline, waits the
rest. So a member's heartbeat every few seconds schedules nothing, and no cancelled timer per
heartbeat waits a whole session timeout in the scheduler (the classic group machine does the
same for its members' sessions).

Not thread-safe on its own: the shard's lock is held around every use (timers fire through
:meth:`~coordination.runtime.runtime.ShardContext.schedule`, with the lock held).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from coordination.group.metadata import TokenTimer
from coordination.runtime.runtime import ShardContext

K = TypeVar("K", bound=Hashable)


@dataclass(slots=True)
class _Deadline:
    deadline_ms: int
    fn: Callable[[], None]
    timer: TokenTimer | None = None


class DeadlineTimers(Generic[K]):
    def __init__(self, context: ShardContext) -> None:
        self.context = context
        self._deadlines: dict[K, _Deadline] = {}

    def __contains__(self, key: K) -> bool:
        return key in self._deadlines

    def set(self, key: K, delay_ms: int, fn: Callable[[], None]) -> None:
        """``fn`` runs ``delay_ms`` from now unless the deadline moves or is cancelled."""
        deadline = self.context.monotonic_ms() + max(delay_ms, 0)
        d = self._deadlines.get(key)
        if d is not None and d.timer is not None and d.timer.due_ms <= deadline:
            d.deadline_ms = deadline
            d.fn = fn
            return
        if d is not None and d.timer is not None:
            d.timer.cancel()
        d = _Deadline(deadline, fn)
        self._deadlines[key] = d
        self._arm(key, d, delay_ms)

    def _arm(self, key: K, d: _Deadline, delay_ms: int) -> None:
        token = TokenTimer(self.context.monotonic_ms() + max(delay_ms, 0))

        def fire() -> None:
            if self._deadlines.get(key) is not d or d.timer is not token:
                return
            remaining = d.deadline_ms - self.context.monotonic_ms()
            if remaining > 0:
                self._arm(key, d, remaining)
                return
            del self._deadlines[key]
            d.fn()

        d.timer = token
        token.timer = self.context.schedule(delay_ms, fire)

    def cancel(self, key: K) -> None:
        d = self._deadlines.pop(key, None)
        if d is not None and d.timer is not None:
            d.timer.cancel()

    def cancel_where(self, matches: Callable[[K], bool]) -> None:
        for key in [k for k in self._deadlines if matches(k)]:
            self.cancel(key)
