"""AlterReplicaLogDirs (KIP-113): move replicas between this broker's log directories. Each
partition is answered as Kafka answers it (LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR,
REPLICA_NOT_AVAILABLE, NONE when already there or when the move is under way); the move itself
copies the log while the partition serves, then swaps it in (:meth:`~broker.replication.
replica_manager.ReplicaManager.alter_replica_log_dirs`), and DescribeLogDirs shows the future
replica meanwhile."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)


@handler(ApiKey.ALTER_REPLICA_LOG_DIRS, "0-2", acl=(AclOperation.ALTER, ResourceType.CLUSTER))
def handle_alter_replica_log_dirs(
    ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    moves: dict[tuple[str, int], str] = {}
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                moves[(t.name, p)] = d.path
    results = ctx.services.replica_manager.alter_replica_log_dirs(moves)
    return _response(results)


def _response(results: dict[tuple[str, int], ErrorCode]) -> AlterReplicaLogDirsResponse:
    topics: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for (topic, p), code in results.items():
        topics.setdefault(topic, []).append(
            AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code)
        )
    return AlterReplicaLogDirsResponse(
        throttle_time_ms=0,
        results=[
            AlterReplicaLogDirTopicResult(topic_name=t, partitions=ps) for t, ps in topics.items()
        ],
    )


@error_response(ApiKey.ALTER_REPLICA_LOG_DIRS)
def alter_replica_log_dirs_error(
    request: AlterReplicaLogDirsRequest, code: ErrorCode, message: str | None
) -> AlterReplicaLogDirsResponse:
    """Kafka's error answer: the error for every partition of the request."""
    return _response(
        {(t.name, p): code for d in request.dirs for t in d.topics for p in t.partitions}
    )
