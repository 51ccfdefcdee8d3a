"""Fetch: file regions of whole batches, sent with sendfile; long-polls for min_bytes.

* Each partition returns the whole batch containing its fetch offset and the batches after it, up
  to ``partition_max_bytes``; the response stops at the request's ``max_bytes`` (capped by the
  broker's ``fetch.max.bytes``) but always carries at least one whole batch.
* When fewer than ``min_bytes`` are available, the fetch waits in the replica manager's fetch
  purgatory until appends bring enough or ``max_wait_ms`` passes.
* Fetch sessions (KIP-227, :mod:`broker.replication.fetch_session`): a full fetch with epoch 0
  creates a session (its id in the response); incremental fetches send only changed and
  forgotten partitions, every partition of the session is read, and the response carries only
  the partitions with something new. Epoch -1 (or no session, before v7) is sessionless.
* read_committed reads up to the last stable offset and returns the aborted transactions that
  overlap the records sent (producer id and first offset), so the consumer drops their records.
* A follower's fetch (``replica_id``, or ``replica_state`` from v15, is a broker id) reads up to
  the log end, records the follower's progress (ISR and high watermark), and answers a follower
  whose log diverged (its ``last_fetched_epoch``) with ``diverging_epoch`` and no records.
* v0-3 consumers get magic 0/1 message sets, down-converted from the log's batches; consumers
  older than v10 never get zstd batches (KIP-110).
* Authorization (Kafka's KafkaApis): a consumer needs READ on each topic (the others answer
  TOPIC_AUTHORIZATION_FAILED and are not read); a follower (replica id >= 0) needs
  CLUSTER_ACTION on the cluster.
* Quotas: the response's bytes count against the client's ``consumer_byte_rate``; over it, the
  response carries ``throttle_time_ms`` and no data (the bytes are not counted) and the
  connection is muted for that long (KIP-219).
"""

from __future__ import annotations

from typing import Any

from broker.dispatch import EncodedBody, RequestContext
from broker.metrics import BYTES_OUT, FAILED_FETCH, FETCH_REQUESTS
from broker.net.connection import FileRegion
from broker.registry import error_response, handler
from broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    PartitionKey,
    SessionError,
)
from broker.replication.log_validator import ZSTD, ZSTD_MIN_FETCH_VERSION
from broker.replication.partition import DivergingEpoch, FetchIsolation, LogReadResult
from broker.replication.replica_manager import FetchParams, FetchRead
from protocol import fast_fetch
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.fast_fetch import PartitionTuple
from protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from protocol.primitives import ZERO_UUID
from protocol.records.batch import iter_batches
from protocol.records.convert import batches_to_legacy
from protocol.schema import Struct

READ_COMMITTED = 1
#: compared on every partition of a fetch: a global is about 20 ns in CPython 3.11, an enum
#: member looked up on its class (``ErrorCode.NONE``) about 140
_NONE = ErrorCode.NONE


def _reads(ctx: RequestContext, request: Struct) -> list[list[FetchRead]]:
    """The request's partitions, grouped by topic, each with its hosted partition (or None)."""
    rm = ctx.services.replica_manager
    version = ctx.api_version
    by_id = ctx.services.metadata.view.topics_by_id if version >= 13 else None
    topics = []
    for t in request.topics:
        name = t.topic
        if by_id is not None:
            meta = by_id.get(t.topic_id)
            name = meta.name if meta is not None else None
        reads = []
        for p in t.partitions:
            part = rm.get_partition(name, p.partition) if name is not None else None
            reads.append(
                FetchRead(
                    name,
                    t.topic_id,
                    p.partition,
                    p.fetch_offset,
                    p.partition_max_bytes,
                    p.current_leader_epoch,
                    part,
                    p.last_fetched_epoch,
                    p.log_start_offset,
                )
            )
        topics.append(reads)
    return topics


#: Errors Kafka answers before reading (the partition is unknown or not authorized, or its
#: records cannot be converted): an empty aborted-transactions list, where a failed read leaves
#: it null.
_EMPTY_ABORTED_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    }
)


def _error(read: FetchRead, code: ErrorCode) -> PartitionTuple:
    """A partition that failed: no offsets at all (Kafka's UnifiedLog.UnknownOffset, -1, for the
    high watermark, last stable offset and log start offset alike)."""
    aborted: list[Any] | None = [] if code in _EMPTY_ABORTED_ERRORS else None
    return (read.index, code, -1, -1, -1, aborted, -1, b"")


def _replica_id(request: FetchRequest, version: int) -> int:
    """The fetching follower's broker id, or -1 for a consumer."""
    if version >= 15:
        state = request.replica_state
        return state.replica_id if state is not None else -1
    return request.replica_id


#: read_committed's empty list of aborted transactions, shared by every partition that has none
#: (never mutated: the encoders only read it)
_NO_ABORTED: list[Any] = []


def _partition_tuple(read: FetchRead, version: int, read_committed: bool) -> PartitionTuple:
    """One partition of the response, converting its records for old consumers."""
    result = read.result
    if result.error != _NONE:
        if read.name is None and version >= 13:
            return _error(read, ErrorCode.UNKNOWN_TOPIC_ID)
        return _error(read, result.error)
    hw, log_start = result.high_watermark, result.log_start_offset
    region = result.region
    records: Any = b""
    if region is not None:
        if version <= 3:
            try:
                records = batches_to_legacy(
                    region.read(), 0 if version <= 1 else 1, fetch_offset=read.fetch_offset
                )
            except RemoteProtocolError:
                return _error(read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        elif version < ZSTD_MIN_FETCH_VERSION:
            # Kafka's rule (KIP-110): zstd batches go only to Fetch v10+ consumers, so an old
            # consumer's region is read and checked (not sent with sendfile)
            data = region.read()
            if any(h.compression == ZSTD for _, h in iter_batches(data, verify_crc=False)):
                return _error(read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
            records = data
        elif region.data is not None:
            records = region.data  # in memory (a small region: see storage's FetchRegion)
        else:
            records = FileRegion(region.fd, region.position, region.length, region)
    aborted: list[Any] | None = None
    if read_committed:
        found = result.aborted_transactions
        aborted = (
            [
                AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                for a in found
            ]
            if found
            else _NO_ABORTED
        )
    return (
        read.index,
        _NONE,
        hw,
        result.last_stable_offset,
        log_start,
        aborted,
        -1,
        records,
    )


def _response(
    ctx: RequestContext,
    topics: list[list[FetchRead]],
    code: ErrorCode,
    read_committed: bool,
    throttle_ms: int = 0,
    session_id: int = INVALID_SESSION_ID,
) -> FetchResponse | EncodedBody:
    """The response: encoded at once by protocol.fast_fetch for v12+ (the common case), else as
    value objects for the generated codec."""
    version = ctx.api_version
    # an error or a throttle answers no partition; a topic the request names without
    # partitions has none to answer (Kafka's response is built from the partitions)
    failed = code != ErrorCode.NONE or throttle_ms
    topics = [] if failed else [reads for reads in topics if reads]
    results = [[_partition_tuple(r, version, read_committed) for r in reads] for reads in topics]
    diverged = any(r.result.diverging_epoch is not None for reads in topics for r in reads)
    if version >= 12 and not diverged:
        by_id = version >= 13
        encoded = fast_fetch.encode(
            version,
            throttle_ms,
            code,
            session_id,
            [
                ((reads[0].topic_id if by_id else reads[0].name or ""), tuples)
                for reads, tuples in zip(topics, results, strict=True)
            ],
        )
        if encoded is not None:
            return EncodedBody(encoded)
    return FetchResponse(
        throttle_time_ms=throttle_ms,
        error_code=code,
        session_id=session_id,
        responses=[
            FetchableTopicResponse(
                topic=reads[0].name if reads and reads[0].name else "",
                topic_id=reads[0].topic_id if reads else ZERO_UUID,
                partitions=[
                    _partition_data(t, r.result.diverging_epoch)
                    for t, r in zip(tuples, reads, strict=True)
                ],
            )
            for reads, tuples in zip(topics, results, strict=True)
        ],
    )


def _runs(reads: list[CachedPartition], by_id: bool) -> list[list[FetchRead]]:
    """A session's partitions as the response's topics: each run of consecutive partitions of
    one topic is one topic entry (a topic may appear more than once, as in Kafka's responses)."""
    runs: list[list[FetchRead]] = []
    run: list[FetchRead] = []
    key: Any = None
    for cp in reads:
        k = cp.topic_id if by_id else cp.name
        if not run or (k is not key and k != key):
            run = [cp]
            runs.append(run)
            key = k
        else:
            run.append(cp)
    return runs


def _changed_partitions(
    ctx: RequestContext, request: FetchRequest, by_id: bool
) -> list[CachedPartition]:
    """An incremental request's partitions (those whose fetch parameters changed or that are
    new to the session)."""
    names = ctx.services.metadata.view.topics_by_id if by_id else None
    out = []
    for t in request.topics:
        name: str | None = t.topic
        if names is not None:
            meta = names.get(t.topic_id)
            name = meta.name if meta is not None else None
        for p in t.partitions:
            out.append(
                CachedPartition(
                    name,
                    t.topic_id,
                    p.partition,
                    p.fetch_offset,
                    p.partition_max_bytes,
                    p.current_leader_epoch,
                    p.last_fetched_epoch,
                    p.log_start_offset,
                )
            )
    return out


def _forgotten(request: FetchRequest, by_id: bool) -> list[PartitionKey]:
    return [
        (t.topic_id if by_id else t.topic, index)
        for t in request.forgotten_topics_data
        for index in t.partitions
    ]


def _resolve(ctx: RequestContext, reads: list[CachedPartition], by_id: bool) -> None:
    """A session's partitions for this request: their topic names (from the ids, which may have
    appeared or gone since the session began) and hosted partitions. A partition whose topic
    id is gone keeps the name it had (none if it never had one): as in Kafka's fetch session,
    a deleted topic's partitions answer UNKNOWN_TOPIC_OR_PARTITION, an id never known
    UNKNOWN_TOPIC_ID. If a topic of the kept name was created again and this broker hosts its
    partition, that partition is another topic's: INCONSISTENT_TOPIC_ID, as Kafka's
    ``ReplicaManager.readFromLocalLog`` answers when the log's topic id is not the session's."""
    hosted = ctx.services.replica_manager.partitions
    names = ctx.services.metadata.view.topics_by_id if by_id else None
    last_id: Any = None
    name: str | None = None
    for cp in reads:
        if names is not None:
            tid = cp.topic_id
            if tid is not last_id and tid != last_id:
                last_id = tid
                meta = names.get(last_id)
                name = meta.name if meta is not None else None
            if name is None:
                cp.partition = None
                if cp.name is not None:
                    # (the old partition itself may still be hosted while it is deleted)
                    other = hosted.get((cp.name, cp.index))
                    if other is not None and other.topic_id != tid:
                        cp.result = LogReadResult(ErrorCode.INCONSISTENT_TOPIC_ID)
                continue
            cp.name = name
        cp.partition = hosted.get((cp.name, cp.index)) if cp.name is not None else None


def _partition_data(t: PartitionTuple, diverging: DivergingEpoch | None) -> PartitionData:
    index, error, hw, lso, log_start, aborted, prr, records = t
    data = PartitionData(
        partition_index=index,
        error_code=error,
        high_watermark=hw,
        last_stable_offset=lso,
        log_start_offset=log_start,
        aborted_transactions=aborted,
        preferred_read_replica=prr,
        records=records,
    )
    if diverging is not None:
        data.diverging_epoch = EpochEndOffset(
            epoch=diverging.epoch, end_offset=diverging.end_offset
        )
    return data


@handler(ApiKey.FETCH, "0-18", acl=(AclOperation.READ, ResourceType.TOPIC))
async def handle_fetch(ctx: RequestContext, request: FetchRequest) -> FetchResponse | EncodedBody:
    version = ctx.api_version
    read_committed = version >= 4 and request.isolation_level == READ_COMMITTED
    by_id = version >= 13
    sessions: FetchSessionCache | None = ctx.services.fetch_sessions
    #: the incremental fetch's session (None: a full or sessionless fetch)
    session: FetchSession | None = None
    #: a full fetch with epoch 0: a session is created after the read
    create = False
    if version >= 7:
        session_id, epoch = request.session_id, request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID and sessions is not None:
                sessions.close(session_id)
            create = epoch == INITIAL_EPOCH and sessions is not None
        elif sessions is None:
            return _response(ctx, [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND, read_committed)
        else:
            try:
                session = sessions.incremental(
                    session_id,
                    epoch,
                    uses_topic_ids=by_id,
                    changed=_changed_partitions(ctx, request, by_id),
                    forgotten=_forgotten(request, by_id),
                )
            except SessionError as e:
                return _response(ctx, [], e.error_code, read_committed)
    session_reads: list[CachedPartition] = []
    topics: list[list[FetchRead]] = []
    flat: list[FetchRead]
    if session is not None:
        assert sessions is not None
        session_reads = sessions.partitions_of(session)
        _resolve(ctx, session_reads, by_id)
        flat = list(session_reads)
    else:
        topics = _reads(ctx, request)
        flat = [r for reads in topics for r in reads]
    replica_id = _replica_id(request, version)
    if replica_id >= 0:
        # a follower needs CLUSTER_ACTION; without it, Kafka's KafkaApis answers every
        # partition asked for TOPIC_AUTHORIZATION_FAILED
        if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            _deny(flat, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    elif ctx.services.authorizer is not None:
        allowed: dict[str, bool] = {}
        for r in flat:
            name = r.name
            if name is None:
                continue
            ok = allowed.get(name)
            if ok is None:
                ok = allowed[name] = ctx.authorize(AclOperation.READ, ResourceType.TOPIC, name)
            if not ok:
                r.result = LogReadResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    broker_cap = ctx.services.handler_config.fetch_max_bytes
    if replica_id >= 0:
        isolation = FetchIsolation.LOG_END
        read_committed = False
    elif read_committed:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    params = FetchParams(
        max_bytes=min(request.max_bytes, broker_cap) if version >= 3 else broker_cap,
        min_bytes=request.min_bytes,
        max_wait_ms=request.max_wait_ms,
        isolation=isolation,
        replica_id=replica_id,
    )
    wanted = [r for r in flat if r.result.error == _NONE]
    if wanted:
        await ctx.services.replica_manager.fetch_messages(params, wanted)
    security = ctx.services.security
    if security is not None and security.quotas.fetch.enabled and replica_id < 0:
        quota = security.quotas.fetch
        size = sum(r.result.region.length for r in wanted if r.result.region is not None)
        now_ms = ctx.now_ms()
        throttle_ms = quota.record(ctx.quota_user, ctx.client_id, size, now_ms)
        if throttle_ms:
            quota.unrecord(ctx.quota_user, ctx.client_id, size, now_ms)
            quota.throttled(throttle_ms)
            ctx.throttle(throttle_ms)
            # no data; an incremental session keeps what it last told (the next fetch resends)
            if session is not None:
                assert sessions is not None
                code = (
                    ErrorCode.NONE
                    if sessions.epoch_is_current(session, request.session_epoch)
                    else ErrorCode.INVALID_FETCH_SESSION_EPOCH
                )
                return _response(ctx, [], code, read_committed, throttle_ms, session.id)
            return _response(ctx, topics, ErrorCode.NONE, read_committed, throttle_ms)
    if session is not None:
        assert sessions is not None
        _count(ctx, _runs(session_reads, by_id), replica_id)
        included = sessions.respond(session, request.session_epoch, session_reads)
        if included is None:
            return _response(
                ctx, [], ErrorCode.INVALID_FETCH_SESSION_EPOCH, read_committed, 0, session.id
            )
        return _response(ctx, _runs(included, by_id), ErrorCode.NONE, read_committed, 0, session.id)
    _count(ctx, topics, replica_id)
    new_session = INVALID_SESSION_ID
    if create:
        assert sessions is not None
        new_session = sessions.create(
            (r for reads in topics for r in reads),
            privileged=replica_id >= 0,
            uses_topic_ids=by_id,
        )
    return _response(ctx, topics, ErrorCode.NONE, read_committed, 0, new_session)


def _count(ctx: RequestContext, topics: list[list[FetchRead]], replica_id: int) -> None:
    """Kafka's BrokerTopicMetrics of a fetch: requests and failures per partition read, bytes
    out per topic (consumers only: followers' bytes are replication)."""
    if ctx.conn is None:
        return
    stats = ctx.conn.request_metrics
    for reads in topics:
        if not reads or reads[0].name is None:
            continue
        counters = stats.topic(reads[0].name)
        for r in reads:
            result = r.result
            counters[FETCH_REQUESTS] += 1
            if result.error != _NONE:
                counters[FAILED_FETCH] += 1
            elif replica_id < 0 and result.region is not None:
                counters[BYTES_OUT] += result.region.length


def _deny(reads: list[FetchRead], code: ErrorCode) -> None:
    for r in reads:
        r.result = LogReadResult(code)


@error_response(ApiKey.FETCH)
def fetch_error(request: FetchRequest, code: ErrorCode, message: str | None) -> FetchResponse:
    return FetchResponse(error_code=code, session_id=0, responses=[])
