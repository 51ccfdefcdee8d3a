"""Blocking calls off the processor loops: requests whose handling waits on the metadata store.

In cluster mode a topic creation, a config change, an ACL or SCRAM write, a producer id block
is a ZooKeeper round trip, and some then wait for the change to come back through the watches
(up to ``zookeeper``'s admin timeout, 30 s). A processor thread that made such a call itself
would stall every connection it owns. Kafka hands these to its controller channel and answers
from a callback; here the handler's blocking part runs on a small pool of threads owned by the
broker (:class:`BlockingCalls`), and the request waits for it as an awaitable (the dispatcher's
``Later``), so its processor keeps serving its other connections. Answers still leave each
connection in request order, and a connection handles its next request only after this one's
answer, as Kafka does.

Thread-safety: :meth:`BlockingCalls.call` may be awaited on any loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: threads that run blocking metadata-store calls for requests (admin requests are rare; a few
#: threads let an ACL change proceed while a topic creation waits for ZooKeeper)
DEFAULT_THREADS = 4


class BlockingCalls:
    """A small pool of ``metadata-io-N`` threads (see the module docstring)."""

    def __init__(self, threads: int = DEFAULT_THREADS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="metadata-io")
        self._stopped = False

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on a pool thread; its result (or exception) here."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    def call_soon(self, fn: Callable[[], object]) -> None:
        """``fn()`` on a pool thread, with nobody waiting (its exceptions are logged);
        RuntimeError once shut down."""

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("background metadata call failed")

        self._pool.submit(run)

    def shutdown(self) -> None:
        """Stops taking calls; calls running finish on their threads (nobody waits for them)."""
        if not self._stopped:
            self._stopped = True
            self._pool.shutdown(wait=False, cancel_futures=True)
