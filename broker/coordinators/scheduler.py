"""Timers for the coordinators on the broker's main event loop, and the bridge that hands a
coordinator's callback (any thread) to a waiting request handler (its processor loop).

Thread-safety: :meth:`LoopScheduler.schedule` and the callbacks of :func:`future_callback` may
be called from any thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class LoopTimer:
    __slots__ = ("cancelled", "handle")

    def __init__(self) -> None:
        self.cancelled = False
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        # a flag, not handle.cancel(): timer handles are not thread-safe; a cancelled timer
        # that fires does nothing
        self.cancelled = True


class LoopScheduler:
    """coordination's Scheduler on an asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._loop_thread = threading.get_ident()

    def now_ms(self) -> int:
        # CLOCK_MONOTONIC, the clock of asyncio's and uvloop's timers (loop.time() is not for
        # other threads: uvloop's updates the loop's cached time)
        return time.monotonic_ns() // 1_000_000

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> LoopTimer:
        timer = LoopTimer()
        delay = max(delay_ms, 0) / 1000

        def fire() -> None:
            if timer.cancelled:
                return
            timer.cancelled = True
            _run_logged(callback)

        def arm() -> None:
            if not timer.cancelled:
                timer.handle = self.loop.call_later(delay, fire)

        if threading.get_ident() == self._loop_thread:
            arm()
        else:
            try:
                self.loop.call_soon_threadsafe(arm)
            except RuntimeError:
                timer.cancelled = True  # the main loop is closed: the broker is stopping
        return timer

    def soon(self, callback: Callable[[], None]) -> None:
        try:
            loop = asyncio.get_running_loop()  # a processor's, while it handles a request
        except RuntimeError:
            self.schedule(0, callback)
            return
        loop.call_soon(_run_logged, callback)


def _run_logged(callback: Callable[[], None]) -> None:
    """A coordinator's timer or deferred work: its failure is logged, the loop goes on."""
    try:
        callback()
    except Exception:
        log.exception("coordinator callback failed")


def future_callback(
    loop: asyncio.AbstractEventLoop, kind: type[T]
) -> tuple[asyncio.Future[T], Callable[[T], None]]:
    """A future on ``loop`` and a thread-safe callback that completes it (once)."""
    future: asyncio.Future[T] = loop.create_future()

    def resolve(value: T) -> None:
        if not future.done():
            future.set_result(value)

    def callback(value: T) -> None:
        if threading.get_ident() == loop_thread:
            resolve(value)
            return
        try:
            loop.call_soon_threadsafe(resolve, value)
        except RuntimeError:
            pass  # the processor's loop is closed: the broker is stopping

    loop_thread = threading.get_ident()
    return future, callback


class Answer(Generic[T]):
    """A coordinator's answer to one request, which may come before the call returns (the
    common case: the write was committed at once) or later, from any thread.

    Pass the object as the callback; then either :attr:`ready` and :attr:`value`, or await
    :meth:`wait` on the handler's loop. Race-free: an answer arriving while the handler decides
    to wait is never lost."""

    __slots__ = ("_future", "_lock", "_loop", "ready", "value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.ready = False
        self.value: T | None = None
        self._future: asyncio.Future[T] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, value: T) -> None:
        with self._lock:
            if self.ready:
                return
            self.ready = True
            self.value = value
            future, loop = self._future, self._loop
        if future is not None and loop is not None:
            try:
                loop.call_soon_threadsafe(_resolve, future, value)
            except RuntimeError:
                pass  # the processor's loop is closed: the broker is stopping

    async def wait(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            if not self.ready:
                self._loop = loop
                self._future = loop.create_future()
            future = self._future
        if future is None:
            return self.value  # type: ignore[return-value]
        return await future


def _resolve(future: asyncio.Future[T], value: T) -> None:
    if not future.done():
        future.set_result(value)
