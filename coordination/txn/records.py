"""The records of ``__transaction_state``: Kafka's ``TransactionLogKey`` and
``TransactionLogValue``, so Kafka's tools read the topic this broker writes.

Key (version 0): the transactional id. Value (version 0; version 1 is flexible with tagged
fields 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion): producer id, epoch,
transaction timeout, state (Kafka's ids: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7), the transaction's partitions by
topic (null in Empty and Complete states), last update and start timestamps. A null value
(tombstone) removes the transactional id. Each is prefixed by its int16 version. We write value
version 1, as Kafka 4 does.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass
from functools import lru_cache

from protocol import primitives
from protocol.codegen import decode_version_prefixed, encode_version_prefixed
from protocol.errors import RemoteProtocolError
from protocol.primitives import write_uvarint
from protocol.schema import INT8, INT16, INT32, INT64, STRING, Message, array, f, message, struct

KEY_VERSION = 0
VALUE_VERSION = 1

TransactionLogKey = message(
    "TransactionLogKey",
    api_key=-1,
    kind="data",
    valid="0",
    flexible="none",
    fields=[f("transactional_id", STRING)],
)

PartitionsSchema = struct(
    "PartitionsSchema",
    [
        f("topic", STRING),
        f("partition_ids", array(INT32)),
    ],
)

TransactionLogValue = message(
    "TransactionLogValue",
    api_key=-1,
    kind="data",
    valid="0-1",
    flexible="1+",
    fields=[
        f("producer_id", INT64),
        f("previous_producer_id", INT64, "1+", tag=0, default=-1),
        f("next_producer_id", INT64, "1+", tag=1, default=-1),
        f("producer_epoch", INT16),
        f("transaction_timeout_ms", INT32),
        f("transaction_status", INT8),
        f("transaction_partitions", array(PartitionsSchema), null="0+"),
        f("transaction_last_update_timestamp_ms", INT64),
        f("transaction_start_timestamp_ms", INT64),
        f("client_transaction_version", INT16, "1+", tag=2, default=0),
    ],
)


class CorruptTxnRecord(RemoteProtocolError):
    """A ``__transaction_state`` record this broker cannot parse."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: int
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int
    client_transaction_version: int = 0


def _decode(cls: type[Message], data: bytes | memoryview) -> tuple[int, Message]:
    try:
        return decode_version_prefixed(cls, data)
    except RemoteProtocolError as e:
        raise CorruptTxnRecord(str(e)) from e


@lru_cache(maxsize=65536)
def txn_key(transactional_id: str) -> bytes:
    """The key of a transactional id's records (cached: every state change writes one)."""
    return encode_version_prefixed(
        TransactionLogKey, KEY_VERSION, TransactionLogKey(transactional_id=transactional_id)
    )


def parse_txn_key(data: bytes | memoryview) -> str:
    """Raises CorruptTxnRecord."""
    _, key = _decode(TransactionLogKey, data)
    return str(key.transactional_id)


#: TransactionLogValue's transaction_status of a transactional id with no transaction (Kafka's
#: TransactionState Empty)
EMPTY_STATE = 0


#: version 1's fixed-size fields: the version, producer id, epoch, timeout and state
_VALUE_HEAD = _struct.Struct(">hqhib")
_TIMESTAMPS = _struct.Struct(">qq")


def _by_topic(partitions: frozenset[tuple[str, int]]) -> dict[str, list[int]]:
    """The partitions grouped by topic, both in order (as Kafka writes them)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


def txn_value(v: TxnLogValue) -> bytes:
    """Value version 1, written field by field: the coordinator writes one per state change,
    and the schema-driven encoder (:func:`txn_value_by_schema`, which gives the same bytes)
    cost a transaction about a tenth of the broker's time."""
    by_topic = _by_topic(v.partitions)
    out = bytearray(
        _VALUE_HEAD.pack(VALUE_VERSION, v.producer_id, v.producer_epoch, v.timeout_ms, v.state)
    )
    if not by_topic and v.state == EMPTY_STATE:
        out.append(0)  # null, as below
    else:
        write_uvarint(out, len(by_topic) + 1)
        for topic, partition_ids in by_topic.items():
            name = topic.encode("utf-8")
            write_uvarint(out, len(name) + 1)
            out += name
            write_uvarint(out, len(partition_ids) + 1)
            for p in partition_ids:
                out += primitives.INT32.pack(p)
            out.append(0)  # the struct's tagged fields
    out += _TIMESTAMPS.pack(v.last_update_ms, v.start_ms)
    tagged: list[tuple[int, bytes]] = []
    if v.previous_producer_id != -1:
        tagged.append((0, primitives.INT64.pack(v.previous_producer_id)))
    if v.next_producer_id != -1:
        tagged.append((1, primitives.INT64.pack(v.next_producer_id)))
    if v.client_transaction_version != 0:
        tagged.append((2, primitives.INT16.pack(v.client_transaction_version)))
    write_uvarint(out, len(tagged))
    for tag, data in tagged:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
    return bytes(out)


def txn_value_by_schema(v: TxnLogValue) -> bytes:
    """:func:`txn_value` through the schema (the reference its tests compare with)."""
    by_topic = _by_topic(v.partitions)
    return encode_version_prefixed(
        TransactionLogValue,
        VALUE_VERSION,
        TransactionLogValue(
            producer_id=v.producer_id,
            previous_producer_id=v.previous_producer_id,
            next_producer_id=v.next_producer_id,
            producer_epoch=v.producer_epoch,
            transaction_timeout_ms=v.timeout_ms,
            transaction_status=v.state,
            # null only in state Empty (0), as Kafka's TransactionLog.valueToBytes writes it:
            # Kafka reads the partitions of every other state and fails on a null list
            transaction_partitions=[
                PartitionsSchema(topic=t, partition_ids=ps) for t, ps in by_topic.items()
            ]
            if by_topic or v.state != EMPTY_STATE
            else None,
            transaction_last_update_timestamp_ms=v.last_update_ms,
            transaction_start_timestamp_ms=v.start_ms,
            client_transaction_version=v.client_transaction_version,
        ),
    )


def parse_txn_value(data: bytes | memoryview) -> TxnLogValue:
    """Raises CorruptTxnRecord."""
    version, v = _decode(TransactionLogValue, data)
    partitions = frozenset(
        (p.topic, i) for p in (v.transaction_partitions or ()) for i in p.partition_ids
    )
    return TxnLogValue(
        producer_id=v.producer_id,
        previous_producer_id=v.previous_producer_id if version >= 1 else -1,
        next_producer_id=v.next_producer_id if version >= 1 else -1,
        producer_epoch=v.producer_epoch,
        timeout_ms=v.transaction_timeout_ms,
        state=v.transaction_status,
        partitions=partitions,
        last_update_ms=v.transaction_last_update_timestamp_ms,
        start_ms=v.transaction_start_timestamp_ms,
        client_transaction_version=v.client_transaction_version if version >= 1 else 0,
    )
