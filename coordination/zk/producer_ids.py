"""Producer id blocks from ``/latest_producer_id_block`` (Kafka's ``ZkProducerIdManager``): read
the last block, write the next one at the version read; a concurrent allocation makes the write
fail and the loop read again, so no block is ever handed out twice, even by two brokers.

Thread-safety: any thread (each call is its own read-then-conditional-write).
"""

from __future__ import annotations

import logging

from kazoo.exceptions import BadVersionError

from coordination.errors import KafkaApiError
from coordination.zk import data as zd
from coordination.zk.client import ZkClient
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1


def allocate_producer_id_block(zk: ZkClient, broker_id: int, size: int) -> tuple[int, int]:
    """A fresh block [start, end] (inclusive) of ``size`` producer ids."""
    for _ in range(100):
        got = zk.get(zd.PRODUCER_ID_BLOCK_PATH)
        if got is None:
            zk.ensure_path(zd.PRODUCER_ID_BLOCK_PATH)
            continue
        data, stat = got
        previous = zd.decode_producer_id_block(data)
        start = 0 if previous is None else previous[2] + 1
        end = start + size - 1
        if end > LONG_MAX:
            raise KafkaApiError("Have exhausted all producerIds.")
        try:
            zk.set(
                zd.PRODUCER_ID_BLOCK_PATH,
                zd.encode_producer_id_block(broker_id, start, end),
                stat.version,
            )
        except BadVersionError:
            continue
        log.info("allocated producer id block [%d, %d]", start, end)
        return start, end
    raise KafkaApiError(
        "producer id block allocation keeps conflicting", ErrorCode.REQUEST_TIMED_OUT
    )
