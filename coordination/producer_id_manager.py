"""Producer ids for InitProducerId (Kafka's ProducerIdManager).

Ids come in blocks from the metadata store (``allocate_producer_id_block``), which hands out each
block once and remembers the next one across restarts (the embedded store in its metadata file;
ZooKeeper in ``/latest_producer_id_block``), so an id is never given to two producers, even by two
brokers. A broker that restarts skips what was left of its block.

Like Kafka's ``RPCProducerIdManager``, the next block is fetched ahead: once 90% of the current
block is used, :meth:`ProducerIdManager.generate_producer_id` hands the fetch to the
``background`` runner the broker provides (a thread that may wait on ZooKeeper), so the request
threads seldom wait for the store; only when the block is exhausted before the next one came
(or without a runner) is the store asked inline. :attr:`~ProducerIdManager.needs_store` tells a
caller that the next id would wait for the store, so it can ask off its event loop.

Thread-safety: a lock; an inline store call holds it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from coordination.metadata.store import MetadataStore

log = logging.getLogger(__name__)

#: Kafka's ProducerIdsBlock size.
PRODUCER_ID_BLOCK_SIZE = 1000
#: Kafka's RPCProducerIdManager prefetches the next block at 90% of the current one.
PREFETCH_AT = 0.9

#: runs a function later on a thread that may block (the broker's blocking-call pool)
BackgroundRunner = Callable[[Callable[[], None]], None]


class ProducerIdManager:
    def __init__(
        self,
        store: MetadataStore,
        *,
        block_size: int = PRODUCER_ID_BLOCK_SIZE,
        background: BackgroundRunner | None = None,
    ) -> None:
        self._store = store
        self._block_size = block_size
        self._background = background
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1  # inclusive; empty until the first id is asked for
        #: the next block, fetched ahead (None: not yet)
        self._prefetched: tuple[int, int] | None = None
        self._prefetching = False

    @property
    def needs_store(self) -> bool:
        """Whether the next id would wait for the store (no id left, none fetched ahead)."""
        return self._next > self._end and self._prefetched is None

    def prefetch(self) -> None:
        """Fetches the next block in the background now (e.g. at start-up)."""
        with self._lock:
            self._start_prefetch()

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                block = self._prefetched
                self._prefetched = None
                if block is None:
                    block = self._allocate()
                self._next, self._end = block
            pid = self._next
            self._next += 1
            if self._next - (self._end - self._block_size + 1) >= self._block_size * PREFETCH_AT:
                self._start_prefetch()
            return pid

    def _allocate(self) -> tuple[int, int]:
        start, end = self._store.allocate_producer_id_block(self._block_size)
        log.info("allocated producer id block [%d, %d]", start, end)
        return start, end

    def _start_prefetch(self) -> None:
        """Under the lock: one background fetch at a time, and none while one waits unused."""
        if self._background is None or self._prefetching or self._prefetched is not None:
            return
        self._prefetching = True
        try:
            self._background(self._prefetch)
        except RuntimeError:  # the runner is shut down: the broker is stopping
            self._prefetching = False

    def _prefetch(self) -> None:
        try:
            block = self._allocate()
        except Exception as e:  # noqa: BLE001 - the next id asks the store inline instead
            log.warning("fetching the next producer id block failed: %s", e)
            block = None
        with self._lock:
            self._prefetching = False
            if block is not None:
                self._prefetched = block
