"""Produce: hand each partition's batches to the replica manager; answer per partition.

acks=0: no response at all; if any partition fails, the connection is closed so the producer
notices (Kafka does the same). acks=1 answers once the batches are in the leader's log. acks=-1
(all) answers once every ISR member has them: on a replicated partition the answer waits (a
delayed produce, up to the request's ``timeout_ms``) for the high watermark; a single replica is
its own whole ISR. v0-2 legacy message sets are converted to magic 2 by the partition's
validator. v13 names topics by id.

KIP-890 part 1 (Kafka's ``ReplicaManager.handleProduceAppend``): with
``transaction.partition.verification.enable`` (a dynamic broker config, as in Kafka: turned off
or on at runtime, for the next request), a transactional producer's first batch in a
partition (no open transaction of that producer there yet) is verified with the producer's
transaction coordinator before it is appended: this broker's own coordinator when it leads the
id's ``__transaction_state`` partition, otherwise the coordinator broker, asked broker to broker
(:class:`~broker.coordinators.verification.TransactionVerifier`) while the request waits as a
:class:`~broker.dispatch.Later` (the processor loop serves other connections meanwhile; this
connection's next request waits, as Kafka handles one request per connection at a time). A
partition not added to the transaction answers INVALID_TXN_STATE (TRANSACTION_ABORTABLE from
v11, which knows it), a fenced producer INVALID_PRODUCER_EPOCH, a coordinator that cannot
answer now NOT_ENOUGH_REPLICAS (retriable, no metadata refresh), instead of starting a
transaction no coordinator knows (a hanging transaction). The verification's guard goes with
the append: a marker written meanwhile voids it (the batch is then refused).

KIP-890 part 2 (transaction version 2, the broker's ``transaction.version`` at 2): from v12 the
producer sends no AddPartitionsToTxn, and the coordinator adds the partition instead of
verifying it (whatever ``transaction.partition.verification.enable`` says: otherwise no marker
would end the transaction); the request waits for that write to ``__transaction_state``.

A partition this broker does not lead yet but is about to (its leader died and this broker, in
its ISR, is being elected: a client may learn of the election from another broker first) is
not refused at once: the request waits briefly for the new state, then appends there or answers
NOT_LEADER_OR_FOLLOWER (:mod:`broker.replication.delayed_leadership` says why: an idempotent
producer's requests in flight stay in order).

Authorization (Kafka's KafkaApis): a produce with transactional records needs a transactional id
and WRITE on it (otherwise every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
each topic needs WRITE (TOPIC_AUTHORIZATION_FAILED). Quotas: the request's record bytes count
against the client's ``producer_byte_rate``; over it, the response carries ``throttle_time_ms``
and the connection is muted (KIP-219).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import cast

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.features import TRANSACTION_VERSION, finalized_level
from broker.metrics import BYTES_IN, FAILED_PRODUCE, MESSAGES_IN, PRODUCE_REQUESTS
from broker.net.connection import CloseConnection
from broker.registry import error_response, handler
from broker.replication.delayed_produce import ProducePartitionStatus
from broker.replication.txn_verification import ProduceVerification
from coordination.errors import KafkaApiError
from coordination.metadata.view import INTERNAL_TOPICS
from coordination.txn.metadata import TV_2
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
from protocol.records.batch import (
    ATTRIBUTES_AT,
    HEADER_SIZE,
    MAGIC_AT,
    MAGIC_V2,
    TRANSACTIONAL_MASK,
    BatchHeader,
    read_header,
)

TopicPartition = tuple[str, int]


def _transactional_header(records: memoryview | None) -> BatchHeader | None:
    """The header of the first batch when it is a transactional magic-2 batch (v3+ requests
    carry one batch per partition); two bytes are read for the others."""
    if (
        records is None
        or len(records) < HEADER_SIZE
        or records[MAGIC_AT] != MAGIC_V2
        or not records[ATTRIBUTES_AT + 1] & TRANSACTIONAL_MASK
    ):
        return None
    try:
        return read_header(records, 0)
    except RemoteProtocolError:
        return None  # not a batch: the partition's validator refuses it


def _start_verification(
    ctx: RequestContext, transactional_id: str, batches: dict[TopicPartition, BatchHeader]
) -> tuple[ProduceVerification, Answer[dict[TopicPartition, ErrorCode]] | None, bool] | None:
    """(the request's verification, the coordinator's answer when it has partitions to verify
    or add, whether it adds them), or None when verification is off. The answer is there at
    once when this broker coordinates the id and only verifies."""
    service = ctx.services.transactions
    if service is None:
        return None
    # KIP-890 part 2: Produce v12+ is a producer of transaction version 2, which sent no
    # AddPartitionsToTxn (Kafka's produceRequestVersionToTransactionSupportedOperation): its
    # partitions are added whatever the verification switch says, or no marker would end them
    add = (
        ctx.api_version >= 12
        and finalized_level(ctx.services.config, ctx.services.metadata.view, TRANSACTION_VERSION)
        >= TV_2
    )
    # a dynamic broker config (Kafka's ProducerStateManagerConfig): read at each request
    if not add and not ctx.services.config["transaction.partition.verification.enable"]:
        return None
    producers = {(h.producer_id, h.producer_epoch) for h in batches.values()}
    if len(producers) > 1:
        raise KafkaApiError(
            "Transactional records contained more than one producer ID",
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        )
    ((producer_id, producer_epoch),) = producers
    verification = ctx.services.replica_manager.start_transaction_verification(
        producer_id, producer_epoch, {tp: h.base_sequence for tp, h in batches.items()}
    )
    to_verify = verification.to_verify
    if not to_verify:
        return verification, None, add
    answer: Answer[dict[TopicPartition, ErrorCode]] = Answer()
    service.add_or_verify(transactional_id, producer_id, producer_epoch, to_verify, answer, add=add)
    return verification, answer, add


def _concurrent(errors: dict[TopicPartition, ErrorCode] | None) -> bool:
    """Whether the coordinator was still ending the producer's last transaction."""
    return errors is not None and ErrorCode.CONCURRENT_TRANSACTIONS in errors.values()


async def _verified_then_appended(
    ctx: RequestContext,
    request: ProduceRequest,
    transactional_id: str,
    batches: dict[TopicPartition, BatchHeader],
    started: tuple[ProduceVerification, Answer[dict[TopicPartition, ErrorCode]], bool],
) -> ProduceResponse | None:
    """A produce whose partitions the coordinator verifies or adds later (another broker's
    coordinator, or a write to ``__transaction_state``): the appends run on the request's loop
    once it has answered.

    An add the coordinator refuses because it is still ending the producer's last transaction
    (CONCURRENT_TRANSACTIONS: with transaction version 2 the producer starts the next one as
    soon as EndTxn answers, before the markers) is asked again every
    ``add.partitions.to.txn.retry.backoff.ms`` for up to
    ``add.partitions.to.txn.retry.backoff.max.ms`` (at most ``request.timeout.ms``), with new
    verification guards (the last transaction's marker voids the old ones), as Kafka's
    partition leaders retry it instead of sending the producer to its own, longer backoff."""
    verification, answer, add = started
    errors = await answer.wait()
    if add and _concurrent(errors):
        config = ctx.services.config
        backoff = config["add.partitions.to.txn.retry.backoff.ms"] / 1000
        patience = min(
            config["add.partitions.to.txn.retry.backoff.max.ms"], config["request.timeout.ms"]
        )
        deadline = time.monotonic() + patience / 1000
        while _concurrent(errors) and time.monotonic() + backoff <= deadline:
            await asyncio.sleep(backoff)
            again = _start_verification(ctx, transactional_id, batches)
            assert again is not None
            verification, retried, _ = again
            errors = {} if retried is None else await retried.wait()
    verification.failed(errors, ctx.api_version)
    result = _produce(ctx, request, transactional_id, verification)
    if isinstance(result, Later):
        return cast(ProduceResponse, await result.awaitable)
    return result


Waiting = list[tuple[PartitionProduceResponse, ProducePartitionStatus]]
#: the longest a produce waits for a leadership this broker is about to learn of
LEADERSHIP_WAIT_MS = 1000


@dataclass(slots=True)
class _Retry:
    """A partition answered NOT_LEADER_OR_FOLLOWER while its leadership is expected here: where
    its answer sits, and what to append again."""

    answers: list[PartitionProduceResponse]
    position: int
    name: str
    records: memoryview | None
    counters: list[int] | None


def _partition(
    ctx: RequestContext,
    name: str | None,
    index: int,
    records: memoryview | None,
    now_ms: int,
    acks: int,
    waiting: Waiting,
    verification: ProduceVerification | None = None,
    counters: list[int] | None = None,
) -> PartitionProduceResponse:
    result = PartitionProduceResponse(index=index, error_code=ErrorCode.NONE, base_offset=-1)
    if counters is not None:
        counters[PRODUCE_REQUESTS] += 1
        counters[FAILED_PRODUCE] += 1  # taken back below once appended
    guard = None
    if verification is not None and name is not None:
        failed = verification.errors.get((name, index))
        if failed is not None:
            result.error_code, result.error_message = failed
            return result
        guard = verification.guard((name, index))
    if name in INTERNAL_TOPICS:
        # Kafka refuses client writes to internal topics (the coordinators write them).
        result.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
        result.error_message = f"Cannot append to internal topic {name}"
        return result
    appended = ctx.services.replica_manager.append_records(
        name,
        index,
        records,
        api_version=ctx.api_version,
        now_ms=now_ms,
        required_acks=acks,
        verification=guard,
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


async def _after_election(
    ctx: RequestContext,
    request: ProduceRequest,
    response: ProduceResponse,
    retries: list[_Retry],
    waiting: Waiting,
    verification: ProduceVerification | None,
) -> ProduceResponse:
    """The partitions refused while their leadership was expected here are appended again once
    their state changed (or the wait ended: they are refused again); then the answer waits for
    the ISR as any acks=all produce."""
    rm = ctx.services.replica_manager
    partitions = [(r.name, r.answers[r.position].index) for r in retries]
    await rm.wait_for_leadership(partitions, min(request.timeout_ms, LEADERSHIP_WAIT_MS))
    now_ms = ctx.now_ms()
    for r in retries:
        if r.counters is not None:  # the first attempt is not counted
            r.counters[PRODUCE_REQUESTS] -= 1
            r.counters[FAILED_PRODUCE] -= 1
        index = r.answers[r.position].index
        r.answers[r.position] = _partition(
            ctx, r.name, index, r.records, now_ms, request.acks, waiting, verification, r.counters
        )
    if waiting:
        return await _when_replicated(ctx, response, waiting, request.timeout_ms)
    return response


@handler(ApiKey.PRODUCE, "0-13", acl=(AclOperation.WRITE, ResourceType.TOPIC))
def handle_produce(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | Later | None:
    version = ctx.api_version
    by_id = ctx.services.metadata.view.topics_by_id if version >= 13 else None
    txn_id = request.transactional_id if version >= 3 else None
    # transactional batches, by partition (Kafka's hasTransactionalRecords)
    batches: dict[TopicPartition, BatchHeader] = {}
    for topic in request.topic_data:
        for p in topic.partition_data:
            header = _transactional_header(p.records)
            if header is not None:
                name = topic.name
                if by_id is not None:
                    meta = by_id.get(topic.topic_id)
                    if meta is None:
                        continue
                    name = meta.name
                batches[(name, p.index)] = header
    verification = None
    if batches:
        if not txn_id or not ctx.authorize(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id
        ):
            # Kafka's KafkaApis.handleProduceRequest: transactional records need the request's
            # transactional id, authorized for WRITE; otherwise the whole request is refused
            refused: ProduceResponse = produce_error(
                request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
            )
            return refused
        started = _start_verification(ctx, txn_id, batches)
        if started is not None:
            verification, answer, add = started
            if answer is not None:
                if not answer.ready or (add and _concurrent(answer.value)):
                    return Later(
                        _verified_then_appended(
                            ctx, request, txn_id, batches, (verification, answer, add)
                        )
                    )
                verification.failed(answer.value or {}, ctx.api_version)
    return _produce(ctx, request, txn_id, verification)


def _produce(
    ctx: RequestContext,
    request: ProduceRequest,
    txn_id: str | None,
    verification: ProduceVerification | None,
) -> ProduceResponse | Later | None:
    acks = request.acks
    version = ctx.api_version
    now_ms = ctx.now_ms()
    by_id = ctx.services.metadata.view.topics_by_id if version >= 13 else None
    responses = []
    waiting: Waiting = []
    retries: list[_Retry] = []
    failed = False
    size = 0
    stats = ctx.conn.request_metrics if ctx.conn is not None else None
    for topic in request.topic_data:
        name: str | None = topic.name
        if by_id is not None:
            meta = by_id.get(topic.topic_id)
            name = meta.name if meta is not None else None
        denied = name is not None and not ctx.authorize(
            AclOperation.WRITE, ResourceType.TOPIC, name
        )
        partitions: list[PartitionProduceResponse] = []
        counters: list[int] | None = None  # Kafka's BrokerTopicMetrics of this topic
        for p in topic.partition_data:
            if p.records is not None:
                size += len(p.records)
            if denied:
                result = PartitionProduceResponse(
                    index=p.index,
                    base_offset=-1,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
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
                    ctx, name, p.index, p.records, now_ms, acks, waiting, verification, counters
                )
                if (
                    result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                    and acks != 0
                    and (verification is None or (name, p.index) not in verification.errors)
                    and ctx.services.replica_manager.leadership_expected(name, p.index)
                ):
                    retries.append(_Retry(partitions, len(partitions), name, p.records, counters))
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
    if retries:
        # not pipelined: this connection's next requests wait behind this one
        return Later(_after_election(ctx, request, response, retries, waiting, verification))
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
