"""A hand-specialised encoder for the broker's hottest response: FetchResponse v12+ (flexible).

The generated codec (:mod:`protocol.codegen`) handles every version; this one handles the common
flexible case with one ``struct`` call per partition instead of several, and takes plain tuples
instead of value objects, which saves the handler from building a struct per partition. It writes
exactly the bytes the generated encoder writes for the same values (the tests hold them equal):

* no aborted transactions list (null) or an empty one (read_committed with no transactions);
* no tagged fields set on partitions (diverging epoch, current leader, snapshot id);
* no top-level node endpoints (v16+ tagged field 0).

Anything else goes through the generated codec (:func:`encode` returns None for it).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

from protocol.codegen import INLINE_RECORDS_MAX
from protocol.primitives import uuid_to_bytes, uvarint_bytes

#: partition_index, error_code, high_watermark, last_stable_offset, log_start_offset,
#: aborted_transactions (None or []), preferred_read_replica, records (bytes-like, a sized region,
#: or None)
PartitionTuple = tuple[int, int, int, int, int, list[Any] | None, int, Any]
#: topic name (v12) or topic id (v13+), and its partitions
TopicTuple = tuple[str | uuid.UUID, Sequence[PartitionTuple]]

_HEAD = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
# partition fixed fields + aborted marker (B) + preferred_read_replica, then the records length
# as a 1-, 2- or 3-byte unsigned varint
_PART = (
    struct.Struct(">ihqqqBiB").pack,
    struct.Struct(">ihqqqBiBB").pack,
    struct.Struct(">ihqqqBiBBB").pack,
)
_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode(
    version: int,
    throttle_time_ms: int,
    error_code: int,
    session_id: int,
    topics: Sequence[TopicTuple],
) -> list[Any] | None:
    """The body of a FetchResponse (no size, no header) as a list of buffers, or None when
    ``version`` < 12 or a value needs the general codec."""
    if version < 12:
        return None
    by_id = version >= 13
    out: list[Any] = []
    b = bytearray(_HEAD.pack(throttle_time_ms, error_code, session_id))
    b += uvarint_bytes(len(topics) + 1)
    pack1, pack2, pack3 = _PART
    for topic, partitions in topics:
        if by_id:
            b += uuid_to_bytes(topic)  # type: ignore[arg-type]
        else:
            name = topic.encode()  # type: ignore[union-attr]
            b += uvarint_bytes(len(name) + 1)
            b += name
        b += uvarint_bytes(len(partitions) + 1)
        for index, error, hw, lso, log_start, aborted, prr, records in partitions:
            if aborted is None:
                marker = 0
            elif not aborted:
                marker = 1
            else:
                return None
            if records is None:
                b += pack1(index, error, hw, lso, log_start, marker, prr, 0)
                b.append(0)
                continue
            n = len(records)
            u = n + 1
            if u < 128:
                b += pack1(index, error, hw, lso, log_start, marker, prr, u)
            elif u < 16384:
                b += pack2(index, error, hw, lso, log_start, marker, prr, (u & 127) | 128, u >> 7)
            elif u < 2097152:
                b += pack3(
                    index,
                    error,
                    hw,
                    lso,
                    log_start,
                    marker,
                    prr,
                    (u & 127) | 128,
                    ((u >> 7) & 127) | 128,
                    u >> 14,
                )
            else:
                return None
            if n > INLINE_RECORDS_MAX or type(records) not in _BYTES_LIKE:
                out.append(b)
                out.append(records)
                b = bytearray(b"\x00")  # this partition's (empty) tagged fields
            else:
                b += records
                b.append(0)
        b.append(0)  # topic tagged fields
    b.append(0)  # top-level tagged fields (no node endpoints)
    out.append(b)
    return out
