"""Produce: hand each partition's batches to the replica manager; answer per partition.

acks=0: no response at all; if any partition fails, the connection is closed so the producer
notices (Kafka does the same). acks=1 answers once the batches are in the leader's log. acks=-1
(all) answers once every ISR member has them: on a replicated partition the answer waits (a
delayed produce, up to the request's ``timeout_ms``) for the high watermark; a single replica is
its own whole ISR. v0-2 legacy message sets are converted to magic 2 by the partition's
validator. v13 names topics by id.

KIP-890 part 1: a transactional producer's first batch in a partition (no open transaction of
that producer there yet) is verified with the transaction coordinator when this broker is it
(``transaction.partition.verification.enable``): a partition not added to the producer's
transaction answers INVALID_TXN_STATE, a fenced producer INVALID_PRODUCER_EPOCH, instead of
starting a transaction no coordinator knows (a hanging transaction).

Authorization (Kafka's KafkaApis): a transactional produce needs WRITE on its transactional id
(otherwise every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic needs
WRITE (TOPIC_AUTHORIZATION_FAILED). Quotas: the request's record bytes count against the
client's ``producer_byte_rate``; over it, the response carries ``throttle_time_ms`` and the
connection is muted (KIP-219).
"""

from __future__ import annotations

from broker.dispatch import Later, RequestContext
from broker.metrics import BYTES_IN, FAILED_PRODUCE, MESSAGES_IN, PRODUCE_REQUESTS
from broker.net.connection import CloseConnection
from broker.registry import error_response, handler
from broker.replication.delayed_produce import ProducePartitionStatus
from coordination.metadata.view import INTERNAL_TOPICS
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import RemoteProtocolError
from protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from protocol.records.batch import HEADER_SIZE, read_header


def _unverified(
    ctx: RequestContext, transactional_id: str, name: str, index: int, records: memoryview | None
) -> ErrorCode:
    """KIP-890's check of a transactional batch: NONE when it may be appended."""
    if records is None or len(records) < HEADER_SIZE:
        return ErrorCode.NONE
    try:
        header = read_header(records, 0)
    except RemoteProtocolError:
        return ErrorCode.NONE  # not a batch: the partition's validator refuses it
    if not header.is_transactional:
        return ErrorCode.NONE
    part = ctx.services.replica_manager.get_partition(name, index)
    if part is None or part.in_transaction(header.producer_id):
        return ErrorCode.NONE
    service = ctx.services.transactions
    if service is None or not bool(
        ctx.services.config["transaction.partition.verification.enable"]
    ):
        return ErrorCode.NONE
    coordinator = service.coordinator
    if not coordinator.coordinates(coordinator.partition_for(transactional_id)):
        return ErrorCode.NONE  # another broker coordinates it: not verified here
    code = coordinator.verify_partitions(
        transactional_id, header.producer_id, header.producer_epoch, [(name, index)]
    )[(name, index)]
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in (ErrorCode.NONE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR):
        return ErrorCode.NONE
    return ErrorCode.INVALID_TXN_STATE


Waiting = list[tuple[PartitionProduceResponse, ProducePartitionStatus]]


def _has_transactional_records(request: ProduceRequest) -> bool:
    """Whether a partition's records start with a transactional batch (Kafka's
    ProduceRequest.hasTransactionalRecords looks at the first batch of each)."""
    for topic in request.topic_data:
        for p in topic.partition_data:
            records = p.records
            if records is None or len(records) < HEADER_SIZE:
                continue
            try:
                if read_header(records, 0).is_transactional:
                    return True
            except RemoteProtocolError:
                continue  # not a batch: the partition's validator refuses it
    return False


def _partition(
    ctx: RequestContext,
    name: str | None,
    index: int,
    records: memoryview | None,
    now_ms: int,
    acks: int,
    waiting: Waiting,
    transactional_id: str | None = None,
    counters: list[int] | None = None,
) -> PartitionProduceResponse:
    result = PartitionProduceResponse(index=index, error_code=ErrorCode.NONE, base_offset=-1)
    if counters is not None:
        counters[PRODUCE_REQUESTS] += 1
        counters[FAILED_PRODUCE] += 1  # taken back below once appended
    if transactional_id is not None and name is not None:
        code = _unverified(ctx, transactional_id, name, index, records)
        if code != ErrorCode.NONE:
            result.error_code = code
            result.error_message = (
                f"{name}-{index} is not part of the producer's transaction {transactional_id}"
            )
            return result
    if name in INTERNAL_TOPICS:
        # Kafka refuses client writes to internal topics (the coordinators write them).
        result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
        result.error_message = f"Cannot append to internal topic {name}"
        return result
    appended = ctx.services.replica_manager.append_records(
        name, index, records, api_version=ctx.api_version, now_ms=now_ms, required_acks=acks
    )
    info = appended.info
    if info is None:
        result.error_code = appended.error
        result.error_message = appended.message
        result.log_start_offset = appended.log_start_offset
        if appended.record_errors:
            result.record_errors = [
                BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                for i, m in appended.record_errors
            ]
        return result
    if counters is not None:
        counters[FAILED_PRODUCE] -= 1
        counters[MESSAGES_IN] += info.record_count
        counters[BYTES_IN] += info.valid_bytes
    result.base_offset = info.first_offset
    result.log_append_time_ms = info.log_append_time
    result.log_start_offset = info.log_start_offset
    if appended.waiting is not None:
        waiting.append((result, appended.waiting))
    return result


async def _when_replicated(
    ctx: RequestContext, response: ProduceResponse, waiting: Waiting, timeout_ms: int
) -> ProduceResponse:
    """The answer of an acks=all produce, once its partitions' ISRs have the batches."""
    codes = await ctx.services.replica_manager.wait_for_replicas(
        [status for _, status in waiting], timeout_ms
    )
    for (result, _), code in zip(waiting, codes, strict=True):
        if code != ErrorCode.NONE:
            result.error_code = code
            result.base_offset = -1
            result.log_append_time_ms = -1
    return response


@handler(ApiKey.PRODUCE, "0-13", acl=(AclOperation.WRITE, ResourceType.TOPIC))
def handle_produce(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | Later | None:
    acks = request.acks
    version = ctx.api_version
    now_ms = ctx.now_ms()
    by_id = ctx.services.metadata.view.topics_by_id if version >= 13 else None
    txn_id = request.transactional_id if version >= 3 else None
    if txn_id is None and _has_transactional_records(request):
        # Kafka's KafkaApis.handleProduceRequest: transactional records need the request's
        # transactional id (authorized for WRITE); without it the whole request is refused
        refused: ProduceResponse = produce_error(
            request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        )
        return refused
    responses = []
    waiting: Waiting = []
    failed = False
    txn_denied = bool(txn_id) and not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id or ""
    )
    size = 0
    stats = ctx.conn.request_metrics if ctx.conn is not None else None
    for topic in request.topic_data:
        name: str | None = topic.name
        if by_id is not None:
            meta = by_id.get(topic.topic_id)
            name = meta.name if meta is not None else None
        denied = txn_denied or (
            name is not None and not ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, name)
        )
        partitions = []
        counters: list[int] | None = None  # Kafka's BrokerTopicMetrics of this topic
        for p in topic.partition_data:
            if p.records is not None:
                size += len(p.records)
            if denied:
                result = PartitionProduceResponse(
                    index=p.index,
                    base_offset=-1,
                    error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                    if txn_denied
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                )
            elif acks not in (-1, 0, 1):
                result = PartitionProduceResponse(
                    index=p.index, base_offset=-1, error_code=ErrorCode.INVALID_REQUIRED_ACKS
                )
            elif name is None:
                result = PartitionProduceResponse(
                    index=p.index, base_offset=-1, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                )
            else:
                if stats is not None and counters is None:
                    counters = stats.topic(name)
                result = _partition(
                    ctx, name, p.index, p.records, now_ms, acks, waiting, txn_id, counters
                )
            failed = failed or result.error_code != ErrorCode.NONE
            partitions.append(result)
        responses.append(
            TopicProduceResponse(
                name=topic.name, topic_id=topic.topic_id, partition_responses=partitions
            )
        )
    quotas = ctx.services.security.quotas if ctx.services.security is not None else None
    if quotas is not None and quotas.produce.enabled:
        throttle_ms = quotas.produce.record(ctx.quota_user, ctx.client_id, size, now_ms)
        if throttle_ms:
            quotas.produce.throttled(throttle_ms)
            ctx.throttle(throttle_ms)
            if acks == 0 and ctx.conn is not None:
                ctx.conn.mute(throttle_ms)
    if acks == 0:
        if failed:
            errors = [
                f"{t.name}-{p.index}: {ErrorCode.of(p.error_code)!r} {p.error_message or ''}"
                for t in responses
                for p in t.partition_responses
                if p.error_code
            ]
            raise CloseConnection("acks=0 produce failed: " + "; ".join(errors))
        return None
    response = ProduceResponse(responses=responses, throttle_time_ms=0)
    if waiting:
        # the records are appended: the producer's next requests need not wait for this one
        return Later(_when_replicated(ctx, response, waiting, request.timeout_ms), pipelined=True)
    return response


@error_response(ApiKey.PRODUCE)
def produce_error(request: ProduceRequest, code: ErrorCode, message: str | None) -> ProduceResponse:
    if request.acks == 0:
        raise CloseConnection(f"acks=0 produce failed: {code!r} {message or ''}")
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    PartitionProduceResponse(
                        index=p.index, error_code=code, base_offset=-1, error_message=message
                    )
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ]
    )
