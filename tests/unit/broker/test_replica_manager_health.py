"""The replica manager's log maintenance thread as /health sees it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ReplicationConfig
from broker.metrics import MetricsRegistry
from broker.replication.replica_manager import ReplicaManager
from storage.manager import LogManager
from tests.support.fake_services import ScriptedStore, view


def test_the_maintenance_thread_counts_as_alive_while_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker whose replica manager is starting its maintenance thread is alive: /health
    answered 503 "the log maintenance thread stopped" when a probe came between the thread's
    creation and its start. Once running it is alive; stopped, it is not."""
    config = BrokerConfig.from_dict({"log.dirs": str(tmp_path / "logs")})
    rm = ReplicaManager(
        broker_id=1,
        config=config,
        replication=ReplicationConfig.from_broker(config),
        metadata=ScriptedStore(view(leader=1, epoch=0, replicas=(1,), isr=(1,), live={1})),  # type: ignore[arg-type]
        log_manager=LogManager(config.log_dirs),
        metrics=MetricsRegistry(),
    )
    seen: list[bool] = []
    start = threading.Thread.start

    def probed_start(thread: threading.Thread) -> None:
        if thread.name == "log-maintenance":
            seen.append(rm.maintenance_alive)  # the probe, just before the thread runs
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", probed_start)
    rm.startup()
    try:
        assert seen == [True]
        assert rm.maintenance_alive
    finally:
        rm.shutdown()
    assert not rm.maintenance_alive
