"""DescribeLogDirs: this broker's log directories (JBOD), whether each is online
(KAFKA_STORAGE_ERROR when an I/O error took it offline), its file system's total and usable
bytes (v4, KIP-827) and the size of each partition in it, with its offset lag (for a current
replica, as Kafka computes it: how far its log end is below its high watermark, so 0 once it
has what its leader acknowledged); a partition being moved to another directory
(AlterReplicaLogDirs) is listed there too, with ``is_future_key`` and the records its copy still
lacks as ``offset_lag``. ``topics`` null asks for every
partition. v5's ``is_cordoned`` (KIP-1066) is false: Odradek has no ``cordoned.log.dirs``, every
online directory takes new partitions."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)


@handler(ApiKey.DESCRIBE_LOG_DIRS, "0-5", acl=(AclOperation.DESCRIBE, ResourceType.CLUSTER))
def handle_describe_log_dirs(
    ctx: RequestContext, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for d in ctx.services.replica_manager.describe_log_dirs(wanted):
        topics: dict[str, list[DescribeLogDirsPartition]] = {}
        for topic, partition, size, offset_lag in d.partitions:
            topics.setdefault(topic, []).append(
                DescribeLogDirsPartition(
                    partition_index=partition,
                    partition_size=size,
                    offset_lag=offset_lag,
                    is_future_key=False,
                )
            )
        for topic, partition, size, lag in d.futures:
            # a move in progress (AlterReplicaLogDirs): the future replica being copied here
            topics.setdefault(topic, []).append(
                DescribeLogDirsPartition(
                    partition_index=partition,
                    partition_size=size,
                    offset_lag=lag,
                    is_future_key=True,
                )
            )
        results.append(
            DescribeLogDirsResult(
                error_code=d.error,
                log_dir=d.path,
                topics=[DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in topics.items()],
                total_bytes=d.total_bytes,
                usable_bytes=d.usable_bytes,
            )
        )
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)


@error_response(ApiKey.DESCRIBE_LOG_DIRS)
def describe_log_dirs_error(
    request: DescribeLogDirsRequest, code: ErrorCode, message: str | None
) -> DescribeLogDirsResponse:
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=code, results=[])
