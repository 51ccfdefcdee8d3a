"""The errors a partition answers with, each carrying its Kafka error code."""

from __future__ import annotations

from coordination.errors import KafkaApiError
from protocol.error_codes import ErrorCode
from storage.errors import StorageError


class NotLeaderOrFollower(KafkaApiError):
    """This broker does not lead the partition (it may follow it, or not host it)."""

    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class UnknownTopicOrPartition(KafkaApiError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class FencedLeaderEpoch(KafkaApiError):
    """The request names an older leader epoch than the partition's (KIP-320)."""

    error_code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpoch(KafkaApiError):
    """The request names a newer leader epoch than this broker knows (KIP-320)."""

    error_code = ErrorCode.UNKNOWN_LEADER_EPOCH


class OffsetOutOfRange(KafkaApiError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class PolicyViolation(KafkaApiError):
    """The topic's configs forbid the operation (DeleteRecords on a topic without the
    ``delete`` cleanup policy)."""

    error_code = ErrorCode.POLICY_VIOLATION


def error_of(exc: Exception) -> tuple[ErrorCode, str | None]:
    """The error code and message a per-partition answer carries for ``exc`` (a KafkaApiError
    or a storage error); anything else is a bug and is re-raised by the caller."""
    if isinstance(exc, KafkaApiError):
        return exc.error_code, str(exc)
    if isinstance(exc, StorageError):
        return ErrorCode.of(exc.error_code), str(exc)
    raise TypeError(f"not a partition error: {exc!r}") from exc
