"""Prints segment and index files the way kafka-dump-log does (``odradek dump-log FILE...``,
whose arguments :mod:`broker.cli` parses before calling :func:`dump_files`).

Output lines follow Kafka's DumpLogSegments so scripts written against it keep working::

    Dumping 00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 ...
    | offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: []
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from protocol.errors import ProtocolError
from protocol.records import batch as rb
from protocol.records import control
from protocol.records import legacy as rl
from protocol.records.compression import CompressionType
from storage import files
from storage import records as stored_records
from storage.util import INT32_MAX

#: A legacy entry's header: offset, size, crc, magic, attributes. Only the header is read, as
#: Kafka's tool does: rl.read_message would also parse key and value and reject a malformed
#: body that this tool reports with its CRC check instead.
_LEGACY = struct.Struct(">qiIbb")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _codec_name(codec: int) -> str:
    try:
        return CompressionType(codec).config_name
    except ValueError:
        return "unknown"


def _timestamp_type(attributes: int) -> str:
    return "LogAppendTime" if attributes & rb.TIMESTAMP_TYPE_MASK else "CreateTime"


def _delete_horizon(header: rb.BatchHeader) -> str:
    horizon = stored_records.delete_horizon_ms(header)
    return "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"


def dump_log(
    path: Path,
    *,
    records: bool = False,
    print_data: bool = False,
    max_bytes: int = INT32_MAX,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> None:
    """Batch lines (and record lines with ``records``) of a ``.log`` file."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        start = files.offset_from_file_name(path.name)
        out.write(f"Log starting offset: {start}\n")
    except ValueError:
        pass
    with open(path, "rb") as f:
        data = f.read(max_bytes)
    pos = 0
    last_offset = -1
    gaps: list[tuple[int, int]] = []
    while len(data) - pos >= rb.LOG_OVERHEAD + 5:
        size = rb.batch_size_at(data, pos)
        if size < rb.LOG_OVERHEAD + 5 or pos + size > len(data):
            break
        magic = data[pos + rb.MAGIC_AT]
        if magic != rb.MAGIC_V2:
            if magic not in (0, 1) or size < rb.LOG_OVERHEAD + 6:
                break
            offset, _, crc, _, attributes = _LEGACY.unpack_from(data, pos)
            ts = -1
            ts_type = "NoTimestampType"
            if magic == 1 and size >= rb.LOG_OVERHEAD + 14:
                ts = struct.unpack_from(">q", data, pos + 18)[0]
                ts_type = _timestamp_type(attributes)
            valid = rl.message_crc(data, pos, size) == crc
            out.write(
                f"offset: {offset} position: {pos} {ts_type}: {ts} size: {size} magic: {magic} "
                f"compresscodec: {_codec_name(attributes & rl.CODEC_MASK)} crc: {crc} "
                f"isvalid: {_bool(valid)}\n"
            )
            pos += size
            continue
        try:
            header = rb.read_header(data, pos)
        except ProtocolError:
            break
        valid = rb.crc_of(data, pos, size) == header.crc
        ts_type = _timestamp_type(header.attributes)
        out.write(
            f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.record_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {_bool(header.is_transactional)} "
            f"isControl: {_bool(header.is_control)} deleteHorizonMs: {_delete_horizon(header)} "
            f"position: {pos} {ts_type}: {header.max_timestamp} size: {size} magic: 2 "
            f"compresscodec: {_codec_name(header.compression)} crc: {header.crc} "
            f"isvalid: {_bool(valid)}\n"
        )
        if records or print_data:
            last_offset = _dump_records(
                data, pos, header, ts_type, print_data, last_offset, gaps, out, err
            )
        pos += size
    if pos < len(data) and max_bytes == INT32_MAX:
        out.write(f"Found {len(data) - pos} invalid bytes at the end of {path.name}\n")
    if gaps:
        err.write(f"Non-consecutive offsets in {path.absolute()}\n")
        for before, after in gaps:
            err.write(f"  {before} is followed by {after}\n")


def _dump_records(
    data: bytes,
    pos: int,
    header: rb.BatchHeader,
    ts_type: str,
    print_data: bool,
    last_offset: int,
    gaps: list[tuple[int, int]],
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        batch = stored_records.decode(data, pos)
    except stored_records.CorruptLogData as e:
        err.write(f"cannot decode the records of the batch at position {pos}: {e}\n")
        return last_offset
    for record in batch.records:
        if record.offset != last_offset + 1:
            gaps.append((last_offset, record.offset))
        last_offset = record.offset
        sequence = (
            (header.base_sequence + record.offset - header.base_offset) & 0x7FFFFFFF
            if header.base_sequence >= 0
            else -1
        )
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        header_keys = ",".join(k for k, _ in record.headers)
        line = (
            f"| offset: {record.offset} {ts_type}: {record.timestamp} keySize: {key_size} "
            f"valueSize: {value_size} sequence: {sequence} headerKeys: [{header_keys}]"
        )
        if header.is_control:
            line += _control_text(record)
        elif print_data:
            if record.key is not None:
                line += f" key: {_text(record.key)}"
            if record.value is not None:
                line += f" payload: {_text(record.value)}"
        out.write(line + "\n")
    return last_offset


def _control_text(record: stored_records.Record) -> str:
    try:
        key = control.parse_control_key(record.key)
        if key.control_type in (control.ControlRecordType.ABORT, control.ControlRecordType.COMMIT):
            marker = control.parse_end_txn_marker(record)
            return (
                f" endTxnMarker: {marker.control_type.name} "
                f"coordinatorEpoch: {marker.coordinator_epoch}"
            )
        try:
            name = control.ControlRecordType(key.control_type).name
        except ValueError:
            name = "UNKNOWN"
        return f" controlType: {name}({key.control_type})"
    except ProtocolError as e:
        return f" controlType: unparseable ({e})"


def dump_offset_index(path: Path, *, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """``offset: O position: P`` lines; index entries checked against the log file."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    base = files.offset_from_file_name(path.name)
    data = path.read_bytes()
    entries = len(data) // 8
    if entries == 0:
        out.write(f"{path} is empty.\n")
        return
    log_path = files.log_file(path.parent, base)
    log_data = log_path.read_bytes() if log_path.exists() else b""
    mismatches = []
    for i in range(entries):
        relative, position = struct.unpack_from(">ii", data, i * 8)
        if i > 0 and relative == 0:
            break  # preallocated zeros after a crash
        offset = base + relative
        try:
            found = rb.read_header(log_data, position).last_offset
        except ProtocolError:
            found = -1
        if found != offset:
            mismatches.append((offset, found))
        out.write(f"offset: {offset} position: {position}\n")
    if mismatches:
        err.write(f"Mismatches in :{path.absolute()}\n")
        for indexed, found in mismatches:
            err.write(f"  Index offset: {indexed}, log offset: {found}\n")


def dump_time_index(path: Path, *, out: TextIO | None = None) -> None:
    """``timestamp: T offset: O`` lines."""
    out = sys.stdout if out is None else out
    base = files.offset_from_file_name(path.name)
    data = path.read_bytes()
    for i in range(len(data) // 12):
        timestamp, relative = struct.unpack_from(">qi", data, i * 12)
        if i > 0 and relative == 0 and timestamp == 0:
            break
        out.write(f"timestamp: {timestamp} offset: {base + relative}\n")


def dump_files(
    paths: Sequence[str | Path],
    *,
    records: bool = False,
    print_data: bool = False,
    max_bytes: int = INT32_MAX,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Dumps each file by its suffix; returns 0, or 1 if a file could not be read."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    status = 0
    for name in paths:
        path = Path(name)
        out.write(f"Dumping {path}\n")
        try:
            if path.name.endswith(files.LOG_FILE_SUFFIX):
                dump_log(
                    path,
                    records=records,
                    print_data=print_data,
                    max_bytes=max_bytes,
                    out=out,
                    err=err,
                )
            elif path.name.endswith(files.INDEX_FILE_SUFFIX):
                dump_offset_index(path, out=out, err=err)
            elif path.name.endswith(files.TIME_INDEX_FILE_SUFFIX):
                dump_time_index(path, out=out)
            else:
                err.write(f"Ignoring unknown file {path}\n")
        except (OSError, ValueError) as e:
            err.write(f"{path}: {e}\n")
            status = 1
    return status
