"""Producer ids for InitProducerId (Kafka's ProducerIdManager).

Ids come in blocks from the metadata store (``allocate_producer_id_block``), which hands out each
block once and remembers the next one across restarts (the embedded store in its metadata file;
ZooKeeper in ``/latest_producer_id_block``), so an id is never given to two producers, even by two
brokers. A broker that restarts skips what was left of its block.

Thread-safety: a lock; the store is asked for a new block while holding it (rarely: once per
``block_size`` ids).
"""

from __future__ import annotations

import logging
import threading

from coordination.metadata.store import MetadataStore

log = logging.getLogger(__name__)

#: Kafka's ProducerIdsBlock size.
PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, store: MetadataStore, *, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self._store = store
        self._block_size = block_size
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1  # inclusive; empty until the first id is asked for

    def generate_producer_id(self) -> int:
        with self._lock:
            if self._next > self._end:
                start, end = self._store.allocate_producer_id_block(self._block_size)
                log.info("allocated producer id block [%d, %d]", start, end)
                self._next, self._end = start, end
            pid = self._next
            self._next += 1
            return pid
