"""AddPartitionsToTxn: adds partitions to a producer's ongoing transaction (KIP-98).

v0-3 carry one transaction (what clients send); v2+ may answer PRODUCER_FENCED (older versions
INVALID_PRODUCER_EPOCH). v4+ are the brokers' batched form (KIP-890): several transactions, each
answered under its id; with ``verify_only`` the partitions are not added, only checked to be in
the transaction already (a partition leader verifying a transactional produce); without it a
partition leader adds them for a producer of transaction version 2 (KIP-890 part 2), which the
transaction's state then records. A partition of
an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as
in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from broker.coordinators.scheduler import Answer
from broker.dispatch import Later, RequestContext
from broker.handlers._txn import fenced_for, transactions
from broker.registry import error_response, handler
from coordination.txn.metadata import TV_2
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)

TopicPartition = tuple[str, int]


def _partitions(topics: Sequence[Any]) -> list[TopicPartition]:
    return [(t.name, p) for t in topics for p in t.partitions]


def _topic_results(
    tps: Sequence[TopicPartition], errors: dict[TopicPartition, ErrorCode]
) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for tp in tps:
        by_topic.setdefault(tp[0], []).append(
            AddPartitionsToTxnPartitionResult(
                partition_index=tp[1], partition_error_code=errors[tp]
            )
        )
    return [
        AddPartitionsToTxnTopicResult(name=t, results_by_partition=r) for t, r in by_topic.items()
    ]


def _one(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    tps: list[TopicPartition],
    verify_only: bool,
) -> Answer[dict[TopicPartition, ErrorCode]]:
    """One transaction's partitions: an answer with one error per partition."""
    version = ctx.api_version
    answer: Answer[dict[TopicPartition, ErrorCode]] = Answer()
    # Kafka's checks: a client (v3 and below) needs WRITE on the transactional id and on each
    # topic; a broker (v4+, KIP-890) CLUSTER_ACTION on the cluster
    if version <= 3:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            answer(dict.fromkeys(tps, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            return answer
        denied = {
            tp for tp in tps if not ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, tp[0])
        }
        if denied:
            answer(
                {
                    tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    if tp in denied
                    else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in tps
                }
            )
            return answer
    view = ctx.services.metadata.view
    unknown = {tp for tp in tps if view.partition(*tp) is None}
    if unknown:
        answer(
            {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in tps
            }
        )
        return answer
    coordinator = transactions(ctx)
    if verify_only:
        answer(coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, tps))
        return answer
    coordinator.add_partitions(
        transactional_id,
        producer_id,
        producer_epoch,
        tps,
        lambda code: answer(dict.fromkeys(tps, fenced_for(code, version, 2))),
        # a broker adding them is a partition leader serving a producer of transaction
        # version 2 (Kafka's TransactionVersion.transactionVersionForAddPartitionsToTxn)
        client_transaction_version=TV_2 if version >= 4 else 0,
    )
    return answer


@handler(
    ApiKey.ADD_PARTITIONS_TO_TXN, "0-5", acl=(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID)
)
def handle_add_partitions_to_txn(
    ctx: RequestContext, request: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse | Later:
    if ctx.api_version >= 4:
        ctx.require(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    if ctx.api_version <= 3:
        tps = _partitions(request.v3_and_below_topics)
        answer = _one(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            tps,
            False,
        )

        def build(errors: dict[TopicPartition, ErrorCode]) -> AddPartitionsToTxnResponse:
            return AddPartitionsToTxnResponse(
                throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(tps, errors)
            )

        if answer.ready and answer.value is not None:
            return build(answer.value)

        async def later_one() -> AddPartitionsToTxnResponse:
            return build(await answer.wait())

        return Later(later_one())

    work = []
    for txn in request.transactions:
        tps = _partitions(txn.topics)
        work.append(
            (
                txn.transactional_id,
                tps,
                _one(
                    ctx,
                    txn.transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                    tps,
                    txn.verify_only,
                ),
            )
        )

    def build_all(values: list[dict[TopicPartition, ErrorCode]]) -> AddPartitionsToTxnResponse:
        return AddPartitionsToTxnResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            results_by_transaction=[
                AddPartitionsToTxnResult(
                    transactional_id=txn_id, topic_results=_topic_results(tps, v)
                )
                for (txn_id, tps, _), v in zip(work, values, strict=True)
            ],
        )

    if all(a.ready for _, _, a in work):
        return build_all([a.value or {} for _, _, a in work])

    async def later() -> AddPartitionsToTxnResponse:
        return build_all([await a.wait() for _, _, a in work])

    return Later(later())


@error_response(ApiKey.ADD_PARTITIONS_TO_TXN)
def add_partitions_to_txn_error(
    request: AddPartitionsToTxnRequest, code: ErrorCode, message: str | None
) -> AddPartitionsToTxnResponse:
    return AddPartitionsToTxnResponse(
        error_code=code,
        results_by_transaction=[],
        results_by_topic_v3_and_below=_topic_results(
            _partitions(request.v3_and_below_topics or []),
            dict.fromkeys(_partitions(request.v3_and_below_topics or []), code),
        ),
    )
