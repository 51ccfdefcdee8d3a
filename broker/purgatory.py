"""Delayed operations: one way to wait until a condition holds or a deadline passes.

Kafka's ``DelayedOperation`` and ``DelayedOperationPurgatory`` are the model. A request that
cannot be answered yet (a fetch below ``min_bytes``; soon an ``acks=all`` produce waiting for
the ISR, a DeleteRecords waiting for the low watermark, transaction markers) becomes a
:class:`DelayedOperation` with a deadline and a :meth:`~DelayedOperation.try_complete` check.
The purgatory watches it under keys (a topic-partition, a group...); whoever changes what a key
stands for (an append, a high-watermark move, a leadership change) calls
:meth:`DelayedOperationPurgatory.check_and_complete` for that key, which re-checks the operations
watching it. An operation completes exactly once: by the event that makes it possible, or by its
deadline.

Operations belong to an event loop (the processor loop of the connection that asked): completion
may be decided on any thread, but the operation's :attr:`~DelayedOperation.future` is resolved on
its own loop, where the waiting request handler continues and builds its response. Unlike Kafka,
the completion work itself (re-reading the logs, encoding) therefore runs on the waiter's loop,
not on the thread that completed it.

Thread-safety: :meth:`DelayedOperation.try_complete`, :meth:`DelayedOperation.force_complete` and
:meth:`DelayedOperationPurgatory.check_and_complete` may be called from any thread;
:meth:`DelayedOperationPurgatory.try_complete_else_watch` is called on the operation's loop.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DelayedOperation(ABC):
    """An operation that completes once: when :meth:`try_complete` finds it can, or when its
    deadline passes (then :attr:`expired` is True). Await :attr:`future` on its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout_ms: int) -> None:
        self.loop = loop
        self.timeout_ms = max(timeout_ms, 0)
        self.future: asyncio.Future[None] = loop.create_future()
        self.expired = False
        self._once = threading.Lock()
        self._timer: asyncio.TimerHandle | None = None
        #: takes the operation off the watch lists it is on (set while watched)
        self._unwatch: Callable[[], None] | None = None

    @abstractmethod
    def try_complete(self) -> bool:
        """Checks whether the operation can complete now and, if so, completes it with
        :meth:`force_complete`; returns whether this call completed it. Called from any thread,
        possibly concurrently: it must only read state that is safe to read anywhere."""

    @property
    def is_completed(self) -> bool:
        return self._once.locked()

    def force_complete(self) -> bool:
        """Completes the operation unless it already is; returns whether this call did."""
        if not self._once.acquire(blocking=False):
            return False
        try:
            self.loop.call_soon_threadsafe(self._finish)
        except RuntimeError:
            pass  # the loop is closed: the broker is stopping and nobody waits any more
        return True

    def _expire(self) -> None:
        self._timer = None
        if self._once.acquire(blocking=False):
            self.expired = True
            self._finish()

    def _finish(self) -> None:
        """On the operation's loop: stop the timer, leave the watch lists, wake the waiter."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if not self.future.done():
            self.future.set_result(None)


class DelayedOperationPurgatory(Generic[K]):
    """Operations waiting under keys, re-checked when something happens to a key.

    ``check_and_complete`` is on hot paths (every append calls it for its partition): when
    nothing waits under the key it is one dictionary lookup, without a lock.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[K, set[DelayedOperation]] = {}
        self._lock = threading.Lock()

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[K]) -> bool:
        """Completes ``op`` now if it can; otherwise watches it under ``keys`` until an event or
        its deadline completes it. Returns whether it completed at once. Call on ``op.loop``."""
        if op.try_complete():
            return True
        keys = list(keys)
        with self._lock:
            for key in keys:
                self._watchers.setdefault(key, set()).add(op)
        op._unwatch = partial(self._unwatch, op, keys)
        # an event between the first check and the watch would otherwise be missed
        if op.try_complete():
            return True
        if not op.is_completed:
            op._timer = op.loop.call_later(op.timeout_ms / 1000, op._expire)
        return False

    def check_and_complete(self, key: K) -> int:
        """Re-checks the operations watching ``key``; returns how many this call completed."""
        watching = self._watchers.get(key)
        if not watching:
            return 0
        with self._lock:
            ops = list(watching)
        completed = 0
        for op in ops:
            if not op.is_completed and op.try_complete():
                completed += 1
        return completed

    def _unwatch(self, op: DelayedOperation, keys: list[K]) -> None:
        with self._lock:
            for key in keys:
                watching = self._watchers.get(key)
                if watching is not None:
                    watching.discard(op)
                    if not watching:
                        del self._watchers[key]

    def complete_all(self, key: K) -> int:
        """Forces every operation watching ``key`` to complete (e.g. the partition is gone)."""
        watching = self._watchers.get(key)
        if not watching:
            return 0
        with self._lock:
            ops = list(watching)
        return sum(op.force_complete() for op in ops)

    @property
    def watched(self) -> int:
        """Operations currently watched (an operation under several keys counts once)."""
        with self._lock:
            return len({id(op) for ops in self._watchers.values() for op in ops})
