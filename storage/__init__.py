"""Odradek storage: Kafka's log on disk (segments, indexes, retention, compaction, recovery).

The broker uses :class:`LogManager` (one per broker) and :class:`PartitionLog` (one per
partition); the rest is exported for tools and tests.
"""

from storage.cleaner import CleanerStats, LogCleaner
from storage.config import LogConfig, LogManagerConfig, log_config_from_broker
from storage.errors import (
    CorruptIndex,
    InconsistentBrokerMetadata,
    InconsistentTopicId,
    KafkaStorageError,
    LogDirInUse,
    LogSegmentOffsetOverflow,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    RecordTooLarge,
    StorageError,
)
from storage.file_records import BatchInfo, FetchRegion, FileRecords
from storage.index import OffsetIndex, TimeIndex
from storage.loader import RecoveryReport, load_log
from storage.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendInfo,
    OffsetAndTimestamp,
    PartitionLog,
    ProducerStateHook,
)
from storage.manager import LogManager
from storage.records import CorruptLogData
from storage.segment import LogSegment
from storage.segments import LogSegments

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "BatchInfo",
    "CleanerStats",
    "CorruptIndex",
    "CorruptLogData",
    "FetchRegion",
    "FileRecords",
    "InconsistentBrokerMetadata",
    "InconsistentTopicId",
    "KafkaStorageError",
    "LogCleaner",
    "LogConfig",
    "LogDirInUse",
    "LogManager",
    "LogManagerConfig",
    "LogSegment",
    "LogSegmentOffsetOverflow",
    "LogSegments",
    "OffsetAndTimestamp",
    "OffsetIndex",
    "OffsetOutOfRange",
    "PartitionLog",
    "ProducerStateHook",
    "RecordBatchTooLarge",
    "RecordTooLarge",
    "RecoveryReport",
    "StorageError",
    "TimeIndex",
    "load_log",
    "log_config_from_broker",
]
