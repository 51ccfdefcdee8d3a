"""broker.id at start-up without ZooKeeper (generation itself: test_zookeeper_brokers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.broker_id import resolve_broker_id
from broker.config import BrokerConfig, ConfigError
from storage.checkpoint import MetaProperties, write_meta_properties


def config(tmp_path: Path, **values: str) -> BrokerConfig:
    return BrokerConfig.from_dict({"log.dirs": f"{tmp_path}/a,{tmp_path}/b", **values})


def test_standalone_keeps_0_or_the_stored_id(tmp_path: Path) -> None:
    assert resolve_broker_id(config(tmp_path)) == 0
    assert resolve_broker_id(config(tmp_path, **{"broker.id": "-1"})) == 0
    (tmp_path / "a").mkdir()
    write_meta_properties(tmp_path / "a" / "meta.properties", MetaProperties(3, None))
    assert resolve_broker_id(config(tmp_path)) == 3
    assert resolve_broker_id(config(tmp_path, **{"broker.id": "-1"})) == 3
    assert resolve_broker_id(config(tmp_path, **{"broker.id": "3"})) == 3
    with pytest.raises(ConfigError, match=r"doesn.t match stored broker\.id 3"):
        resolve_broker_id(config(tmp_path, **{"broker.id": "4"}))


def test_log_dirs_that_disagree_and_ids_above_the_reserved_range_are_refused(
    tmp_path: Path,
) -> None:
    for d, broker_id in (("a", 1), ("b", 2)):
        (tmp_path / d).mkdir()
        write_meta_properties(tmp_path / d / "meta.properties", MetaProperties(broker_id, None))
    with pytest.raises(ConfigError, match=r"Failed to match broker\.id across log\.dirs"):
        resolve_broker_id(config(tmp_path))
    with pytest.raises(ConfigError, match=r"above reserved\.broker\.max\.id"):
        resolve_broker_id(config(tmp_path / "x", **{"broker.id": "1001"}))
    assert (
        resolve_broker_id(
            config(tmp_path / "y", **{"broker.id": "1001", "broker.id.generation.enable": "false"})
        )
        == 1001
    )
