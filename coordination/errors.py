"""Exceptions that carry a Kafka error code: handlers turn them into responses."""

from __future__ import annotations

from protocol.error_codes import ErrorCode


class KafkaApiError(Exception):
    """A failure that has a Kafka error code and a message for the client."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", error_code: ErrorCode | None = None) -> None:
        super().__init__(message or (error_code or self.error_code).message)
        if error_code is not None:
            self.error_code = error_code


class TopicExists(KafkaApiError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class UnknownTopic(KafkaApiError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class UnknownTopicId(KafkaApiError):
    error_code = ErrorCode.UNKNOWN_TOPIC_ID


class InvalidTopic(KafkaApiError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitions(KafkaApiError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactor(KafkaApiError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignment(KafkaApiError):
    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class InvalidConfig(KafkaApiError):
    error_code = ErrorCode.INVALID_CONFIG


class InvalidRequest(KafkaApiError):
    error_code = ErrorCode.INVALID_REQUEST


class NotController(KafkaApiError):
    error_code = ErrorCode.NOT_CONTROLLER


class TopicDeletionDisabled(KafkaApiError):
    error_code = ErrorCode.TOPIC_DELETION_DISABLED


class PolicyViolation(KafkaApiError):
    error_code = ErrorCode.POLICY_VIOLATION


class InvalidUpdateVersion(KafkaApiError):
    """A partition-state change proposed at a stale partition epoch (AlterPartition's
    INVALID_UPDATE_VERSION): someone else changed the partition first."""

    error_code = ErrorCode.INVALID_UPDATE_VERSION
