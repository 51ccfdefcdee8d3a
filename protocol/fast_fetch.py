"""A hand-specialised encoder for the broker's hottest response: FetchResponse v12+ (flexible).

The generated codec (:mod:`protocol.codegen`) handles every version; this one handles the common
flexible case with one ``struct`` call per partition instead of several, and takes plain tuples
instead of value objects, which saves the handler from building a struct per partition. It writes
exactly the bytes the generated encoder writes for the same values (the tests hold them equal):

* no aborted transactions list (null) or an empty one (read_committed with no transactions);
* no tagged fields set on partitions (diverging epoch, current leader, snapshot id);
* no top-level node endpoints (v16+ tagged field 0).

Anything else goes through the generated codec (:func:`encode` returns None for it).

:func:`encode` is the compiled twin of :func:`encode_py` (``protocol/_fast_fetch.c``) when it was
built, which ``pip install`` does where a C compiler is available; otherwise, or with the
environment variable ``ODRADEK_NO_EXTENSIONS`` set, it is :func:`encode_py`. Both write the same
bytes in the same buffers; :data:`ACCELERATED` says which one runs. The pure-Python loop costs at
least ~200 ns per partition in CPython 3.11, above the 2 µs budget for 10 partitions.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Callable, Sequence
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
# One struct call per partition writes: a lead byte (the previous partition's empty tagged fields,
# or for a topic's first partition the last byte of the partition count), the partition's fixed
# fields, the aborted-transactions marker (0 null, 1 empty), preferred_read_replica and the records
# length as a 1-, 2- or 3-byte unsigned varint. Leading with the previous partition's tag byte
# lets a partition whose records travel as their own buffer start a new buffer with its header.
_PART1 = struct.Struct(">BihqqqBiB").pack
_PART2 = struct.Struct(">BihqqqBiBB").pack
_PART3 = struct.Struct(">BihqqqBiBBB").pack
_BYTES_LIKE = (bytes, bytearray, memoryview)
_INLINE_MAX_U = INLINE_RECORDS_MAX + 1  # the length varint's value (length + 1) at the limit


def encode_py(
    version: int,
    throttle_time_ms: int,
    error_code: int,
    session_id: int,
    topics: Sequence[TopicTuple],
) -> list[Any] | None:
    """The body of a FetchResponse (no size, no header) as a list of buffers, or None when
    ``version`` < 12 or a value needs the general codec.

    Records above INLINE_RECORDS_MAX bytes, and records that are not bytes-like (file regions),
    are their own buffers; everything else is gathered into bytearrays between them."""
    if version < 12:
        return None
    by_id = version >= 13
    out: list[Any] = []
    append = out.append
    b = bytearray(_HEAD.pack(throttle_time_ms, error_code, session_id))
    b += uvarint_bytes(len(topics) + 1)
    for topic, partitions in topics:
        if by_id:
            b += uuid_to_bytes(topic)  # type: ignore[arg-type]
        else:
            name = topic.encode()  # type: ignore[union-attr]
            b += uvarint_bytes(len(name) + 1)
            b += name
        if not partitions:
            b += b"\x01\x00"  # no partitions, no topic tagged fields
            continue
        count = uvarint_bytes(len(partitions) + 1)
        b += count[:-1]
        lead = count[-1]
        for index, error, hw, lso, log_start, aborted, prr, records in partitions:
            if aborted:
                return None  # aborted transactions: the generated codec writes them
            marker = aborted is not None
            if records is None:
                b += _PART1(lead, index, error, hw, lso, log_start, marker, prr, 0)
                lead = 0
                continue
            u = len(records) + 1
            if u >= 16384:
                if u >= 2097152:
                    return None
                head = _PART3(
                    lead,
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
            elif u >= 128:
                head = _PART2(
                    lead, index, error, hw, lso, log_start, marker, prr, (u & 127) | 128, u >> 7
                )
            else:
                head = _PART1(lead, index, error, hw, lso, log_start, marker, prr, u)
            lead = 0
            if u > _INLINE_MAX_U or type(records) not in _BYTES_LIKE:
                if b:
                    b += head
                    append(b)
                    b = bytearray()
                else:
                    append(head)
                append(records)
            else:
                b += head
                b += records
        b += b"\x00\x00"  # the last partition's and the topic's tagged fields
    b.append(0)  # top-level tagged fields (no node endpoints)
    append(b)
    return out


Encoder = Callable[[int, int, int, int, Sequence[TopicTuple]], "list[Any] | None"]

#: the encoder the broker uses: the compiled one when it is available and allowed
encode: Encoder = encode_py
#: True when :func:`encode` is the compiled encoder
ACCELERATED = False
if not os.environ.get("ODRADEK_NO_EXTENSIONS"):
    try:
        from protocol import _fast_fetch
    except ImportError:  # pragma: no cover - built where a C compiler is available
        pass
    else:
        encode = _fast_fetch.encode
        ACCELERATED = True
