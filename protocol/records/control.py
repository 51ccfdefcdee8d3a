"""Control batches and control records (Kafka's "Control Batches"; KIP-98).

A control batch has the control bit (and, for transaction markers, the transactional bit) set and
holds one control record, never handed to applications. Its key::

    version  int16   0
    type     int16   0 = abort, 1 = commit (KRaft adds 2.. for its own log)

An end-transaction marker's value::

    version           int16   0
    coordinatorEpoch  int32

Readers accept higher key and value versions and ignore bytes past the fields they know, as
Kafka does.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import Final, NamedTuple

from protocol.errors import CorruptRecord
from protocol.records.batch import NO_PARTITION_LEADER_EPOCH, NO_SEQUENCE
from protocol.records.record import CREATE_TIME, Record, RecordBatch, RecordBatchBuilder


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


CONTROL_KEY_VERSION: Final = 0
END_TXN_MARKER_VERSION: Final = 0

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlKey(NamedTuple):
    version: int
    control_type: int


class EndTransactionMarker(NamedTuple):
    """The meaning of an abort or commit control record."""

    control_type: ControlRecordType
    coordinator_epoch: int

    @property
    def committed(self) -> bool:
        return self.control_type == ControlRecordType.COMMIT


def control_record_key(control_type: int, *, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, control_type)


def end_txn_marker_value(coordinator_epoch: int, *, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _MARKER.pack(version, coordinator_epoch)


def parse_control_key(key: bytes | None) -> ControlKey:
    """Version and type of a control record key. Raises CorruptRecord."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecord(f"control record key of {0 if key is None else len(key)} bytes")
    version, control_type = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecord(f"control record key version {version}")
    return ControlKey(version, control_type)


def parse_end_txn_marker(record: Record) -> EndTransactionMarker:
    """The abort/commit marker a control record carries. Raises CorruptRecord if it is not one."""
    _, control_type = parse_control_key(record.key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise CorruptRecord(f"control record type {control_type} is not a transaction marker")
    value = record.value
    if value is None or len(value) < _MARKER.size:
        raise CorruptRecord(
            f"transaction marker value of {0 if value is None else len(value)} bytes"
        )
    version, coordinator_epoch = _MARKER.unpack_from(value)
    if version < 0:
        raise CorruptRecord(f"transaction marker version {version}")
    return EndTransactionMarker(ControlRecordType(control_type), coordinator_epoch)


def control_type_of(batch: RecordBatch) -> int | None:
    """The control type of a control batch's record (None for data batches and empty ones)."""
    if not batch.is_control or not batch.records:
        return None
    return parse_control_key(batch.records[0].key).control_type


def build_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """An end-transaction marker batch (abort or commit), as the broker writes it on
    WriteTxnMarkers: transactional, control, uncompressed, one record, no sequence."""
    builder = RecordBatchBuilder(
        timestamp_type=CREATE_TIME,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        transactional=True,
        control=True,
    )
    builder.append(
        end_txn_marker_value(coordinator_epoch),
        key=control_record_key(control_type),
        timestamp=timestamp,
    )
    return builder.build()
