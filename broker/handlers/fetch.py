"""Fetch: file regions of whole batches, sent with sendfile; long-polls for min_bytes.

* Each partition returns the whole batch containing its fetch offset and the batches after it, up
  to ``partition_max_bytes``; the response stops at the request's ``max_bytes`` (capped by the
  broker's ``fetch.max.bytes``) but always carries at least one whole batch.
* When fewer than ``min_bytes`` are available, the fetch waits until appends bring enough or
  ``max_wait_ms`` passes (see broker.replica_manager.FetchWaiter).
* Fetch sessions (KIP-227) are declined correctly: every response has session_id 0, so clients do
  full fetches; a request naming a session we never created gets FETCH_SESSION_ID_NOT_FOUND.
* read_committed reads up to the last stable offset (the high watermark: no transactions yet)
  with an empty aborted-transactions list.
* v0-3 consumers get magic 0/1 message sets, down-converted from the log's batches.
"""

from __future__ import annotations

import asyncio
from typing import Any

from broker.dispatch import EncodedBody, RequestContext
from broker.network import FileRegion
from broker.registry import error_response, handler
from broker.replica_manager import FetchWaiter, Partition
from broker.validation import ZSTD, ZSTD_MIN_FETCH_VERSION
from protocol import fast_fetch
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.fast_fetch import PartitionTuple
from protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from protocol.records.batch import iter_batches
from protocol.records.convert import batches_to_legacy
from protocol.schema import Struct
from storage.errors import OffsetOutOfRange, StorageError

READ_COMMITTED = 1
FINAL_EPOCH = -1


class _Read:
    """One partition's part of a fetch: where to read and what was found."""

    __slots__ = ("fetch_offset", "max_bytes", "name", "partition", "request", "result", "topic_id")

    def __init__(
        self, name: str | None, topic_id: Any, request: Struct, partition: Partition | None
    ) -> None:
        self.name = name
        self.topic_id = topic_id
        self.request = request
        self.partition = partition
        self.fetch_offset = request.fetch_offset
        self.max_bytes = request.partition_max_bytes
        self.result: PartitionTuple | None = None


def _resolve(ctx: RequestContext, request: Struct) -> list[list[_Read]]:
    rm = ctx.broker.replica_manager
    by_id = ctx.broker.metadata.view.topics_by_id if ctx.api_version >= 13 else None
    topics = []
    for t in request.topics:
        name = t.topic
        if by_id is not None:
            meta = by_id.get(t.topic_id)
            name = meta.name if meta is not None else None
        reads = []
        for p in t.partitions:
            part = rm.get(name, p.partition) if name is not None else None
            reads.append(_Read(name, t.topic_id, p, part))
        topics.append(reads)
    return topics


def _error(read: _Read, code: ErrorCode, hw: int = -1, log_start: int = -1) -> PartitionTuple:
    return (read.request.partition, code, hw, hw, log_start, None, -1, b"")


def _read_all(
    ctx: RequestContext, request: Struct, topics: list[list[_Read]], max_bytes: int
) -> tuple[int, bool]:
    """Reads every partition; returns (bytes found, whether any partition has an error)."""
    version = ctx.api_version
    read_committed = version >= 4 and request.isolation_level == READ_COMMITTED
    total = 0
    has_error = False
    for reads in topics:
        for read in reads:
            part = read.partition
            if part is None:
                if read.name is None and version >= 13:
                    code = ErrorCode.UNKNOWN_TOPIC_ID
                else:
                    code = ctx.broker.replica_manager.leader_partition(
                        read.name, read.request.partition
                    )[1]
                read.result = _error(read, code)
                has_error = True
                continue
            if not part.is_leader:
                read.result = _error(read, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                has_error = True
                continue
            plog = part.log
            epoch = read.request.current_leader_epoch
            if epoch >= 0 and epoch != part.leader_epoch:
                code = (
                    ErrorCode.FENCED_LEADER_EPOCH
                    if epoch < part.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH
                )
                read.result = _error(read, code)
                has_error = True
                continue
            hw = plog.high_watermark
            log_start = plog.log_start_offset
            limit = min(read.max_bytes, max_bytes - total)
            region = None
            try:
                if limit > 0 or total == 0:
                    region = plog.read(
                        read.fetch_offset, max(limit, 0), max_offset=hw, min_one_batch=total == 0
                    )
            except OffsetOutOfRange:
                read.result = _error(read, ErrorCode.OFFSET_OUT_OF_RANGE, hw, log_start)
                has_error = True
                continue
            except StorageError as e:
                read.result = _error(read, ErrorCode.of(e.error_code), hw, log_start)
                has_error = True
                continue
            records: Any = b""
            if region is not None:
                total += region.length
                if version <= 3:
                    try:
                        records = batches_to_legacy(
                            region.read(), 0 if version <= 1 else 1, fetch_offset=read.fetch_offset
                        )
                    except RemoteProtocolError:
                        read.result = _error(
                            read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, hw, log_start
                        )
                        has_error = True
                        continue
                elif version < ZSTD_MIN_FETCH_VERSION:
                    # Kafka's rule (KIP-110): zstd batches go only to Fetch v10+ consumers, so an
                    # old consumer's region is read and checked (not sent with sendfile)
                    data = region.read()
                    if any(h.compression == ZSTD for _, h in iter_batches(data, verify_crc=False)):
                        read.result = _error(
                            read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, hw, log_start
                        )
                        has_error = True
                        continue
                    records = data
                else:
                    records = FileRegion(region.fd, region.position, region.length, region)
            read.result = (
                read.request.partition,
                ErrorCode.NONE,
                hw,
                hw,
                log_start,
                [] if read_committed else None,
                -1,
                records,
            )
    return total, has_error


def _response(ctx: RequestContext, topics: list[list[_Read]], code: ErrorCode) -> Any:
    """The response: encoded at once by protocol.fast_fetch for v12+ (the common case), else as
    value objects for the generated codec."""
    version = ctx.api_version
    if code != ErrorCode.NONE:
        topics = []
    if version >= 12:
        by_id = version >= 13
        encoded = fast_fetch.encode(
            version,
            0,
            code,
            0,
            [
                ((reads[0].topic_id if by_id else reads[0].name or ""), [r.result for r in reads])  # type: ignore[misc]
                for reads in topics
            ],
        )
        if encoded is not None:
            return EncodedBody(encoded)
    return FetchResponse(
        throttle_time_ms=0,
        error_code=code,
        session_id=0,
        responses=[
            FetchableTopicResponse(
                topic=reads[0].name if reads and reads[0].name else "",
                topic_id=reads[0].topic_id if reads else None,
                partitions=[_partition_data(r.result) for r in reads],  # type: ignore[arg-type]
            )
            for reads in topics
        ],
    )


def _partition_data(t: PartitionTuple) -> Struct:
    index, error, hw, lso, log_start, aborted, prr, records = t
    return PartitionData(
        partition_index=index,
        error_code=error,
        high_watermark=hw,
        last_stable_offset=lso,
        log_start_offset=log_start,
        aborted_transactions=aborted,
        preferred_read_replica=prr,
        records=records,
    )


@handler(ApiKey.FETCH, "0-18")
async def handle_fetch(ctx: RequestContext, request: Struct) -> Any:
    version = ctx.api_version
    if version >= 7:
        if request.session_id != 0:
            return _response(ctx, [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if request.session_epoch not in (0, FINAL_EPOCH):
            return _response(ctx, [], ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    topics = _resolve(ctx, request)
    for reads, t in zip(topics, request.topics, strict=True):
        for r in reads:
            if r.name is None:
                r.name = t.topic
    broker_cap = int(ctx.broker.config["fetch.max.bytes"])
    max_bytes = min(request.max_bytes, broker_cap) if version >= 3 else broker_cap
    total, has_error = _read_all(ctx, request, topics, max_bytes)
    wait_ms = request.max_wait_ms
    if total >= request.min_bytes or wait_ms <= 0 or has_error:
        return _response(ctx, topics, ErrorCode.NONE)

    loop = asyncio.get_running_loop()
    waiter = FetchWaiter(loop, max(request.min_bytes - total, 1))
    parts = {r.partition for reads in topics for r in reads if r.partition is not None}
    for part in parts:
        part.add_waiter(waiter)
    timer = loop.call_later(wait_ms / 1000, waiter.wake)
    try:
        await waiter.future
    finally:
        timer.cancel()
        for part in parts:
            part.remove_waiter(waiter)
    _read_all(ctx, request, topics, max_bytes)
    return _response(ctx, topics, ErrorCode.NONE)


@error_response(ApiKey.FETCH)
def fetch_error(request: Struct, code: ErrorCode, message: str | None) -> Struct:
    return FetchResponse(error_code=code, session_id=0, responses=[])
