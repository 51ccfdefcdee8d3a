"""Exceptions raised by the storage layer.

Each carries the Kafka error code the broker should answer with (``error_code``), so a handler can
put it in a per-partition response without a lookup table. Misuse by our own code (a negative
offset where none is possible, appending to a closed log) raises ``ValueError``/``RuntimeError``.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every exception the storage package raises on purpose."""

    #: The Kafka error code that answers this failure (UNKNOWN_SERVER_ERROR unless overridden).
    error_code: int = -1


class OffsetOutOfRange(StorageError):
    """An offset below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    error_code = 1

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is out of range: log start offset {log_start_offset}, "
            f"log end offset {log_end_offset}"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLarge(StorageError):
    """A batch larger than the topic's ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""

    error_code = 10


class RecordBatchTooLarge(StorageError):
    """An append above ``segment.bytes``, which no segment can hold (RECORD_LIST_TOO_LARGE)."""

    error_code = 18


class KafkaStorageError(StorageError):
    """An I/O error on a log directory (KAFKA_STORAGE_ERROR). The log is left consistent: a failed
    append is cut back off the segment before this is raised."""

    error_code = 56


class InconsistentTopicId(StorageError):
    """``partition.metadata`` names another topic id than expected (INCONSISTENT_TOPIC_ID)."""

    error_code = 103


class LogSegmentOffsetOverflow(StorageError):
    """A batch whose offsets do not fit a segment's 32-bit relative offsets."""


class CorruptIndex(StorageError):
    """An index file that fails its sanity check; the loader rebuilds it from the log."""


class LogDirInUse(StorageError):
    """Another process holds the lock of a log directory."""


class InconsistentBrokerMetadata(StorageError):
    """``meta.properties`` names another broker id or cluster id than the one configured."""
