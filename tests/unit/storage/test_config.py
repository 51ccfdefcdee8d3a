import pytest

from storage.config import LogConfig, LogManagerConfig, log_config_from_broker


def test_defaults_are_kafkas():
    c = LogConfig()
    assert c.segment_bytes == 1 << 30
    assert c.index_interval_bytes == 4096
    assert c.segment_index_bytes == 10 * 1024 * 1024
    assert c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1
    assert c.file_delete_delay_ms == 60000
    assert c.cleanup_policy == {"delete"} and c.delete and not c.compact


def test_from_mapping_parses_strings_and_ignores_broker_keys():
    c = LogConfig.from_mapping(
        {
            "segment.bytes": "1024",
            "cleanup.policy": "compact,delete",
            "preallocate": "true",
            "min.cleanable.dirty.ratio": "0.1",
            "compression.type": "lz4",
            "min.insync.replicas": 2,
        }
    )
    assert c.segment_bytes == 1024 and c.compact and c.delete and c.preallocate
    assert c.min_cleanable_dirty_ratio == 0.1
    d = c.with_overrides({"cleanup.policy": ["compact"]})
    assert d.compact and not d.delete and d.segment_bytes == 1024
    assert LogConfig.from_mapping(d.to_mapping()) == d


@pytest.mark.parametrize(
    "bad",
    [
        {"segment.bytes": 10},
        {"cleanup.policy": "shred"},
        {"message.timestamp.type": "Later"},
        {"min.cleanable.dirty.ratio": 2},
        {"preallocate": "maybe"},
    ],
)
def test_invalid_values(bad):
    with pytest.raises(ValueError):
        LogConfig.from_mapping(bad)


def test_broker_keys_with_hours_and_minutes():
    c = log_config_from_broker(
        {"log.retention.hours": 1, "log.roll.hours": 2, "log.segment.bytes": 999}
    )
    assert c.retention_ms == 3600_000 and c.segment_ms == 7200_000 and c.segment_bytes == 999
    c = log_config_from_broker({"log.retention.minutes": 3, "log.retention.hours": 1})
    assert c.retention_ms == 180_000
    c = log_config_from_broker({"log.retention.ms": 5, "log.retention.minutes": 3})
    assert c.retention_ms == 5


def test_manager_config_from_mapping():
    m = LogManagerConfig.from_mapping(
        {"log.retention.check.interval.ms": "1000", "log.cleaner.enable": "false"}
    )
    assert m.retention_check_interval_ms == 1000 and not m.cleaner_enable
