"""A produce for a partition whose leadership this broker is about to learn of (its leader
died, this broker is in the ISR) waits for the new state instead of being refused at once: the
replica manager's rule (:meth:`ReplicaManager.leadership_expected`), its wait, and the produce
handler appending once the state arrives, with the connection's order kept."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from broker.config import BrokerConfig, ReplicationConfig
from broker.dispatch import Dispatcher
from broker.handlers import load_handlers
from broker.metrics import FAILED_PRODUCE, PRODUCE_REQUESTS, MetricsRegistry
from broker.net.connection import Deferred
from broker.replication.replica_manager import AppendResult, ReplicaManager
from coordination.metadata.view import (
    ClusterView,
)
from protocol.error_codes import ErrorCode
from protocol.headers import encode_request
from storage.log import AppendInfo
from storage.manager import LogManager
from tests.support.fake_services import (
    FakeConnection,
    FakeReplicaManager,
    ScriptedStore,
    awaited,
    call,
    produce,
    services,
    session,
    view,
)


@pytest.fixture
def make_manager(tmp_path: Path) -> Iterator[Callable[[ClusterView], ReplicaManager]]:
    managers: list[ReplicaManager] = []

    def make(initial: ClusterView) -> ReplicaManager:
        config = BrokerConfig.from_dict({"log.dirs": str(tmp_path / f"logs-{len(managers)}")})
        rm = ReplicaManager(
            broker_id=1,
            config=config,
            replication=ReplicationConfig.from_broker(config),
            metadata=ScriptedStore(initial),  # type: ignore[arg-type]
            log_manager=LogManager(config.log_dirs),
            metrics=MetricsRegistry(),
        )
        rm.startup()
        managers.append(rm)
        return rm

    yield make
    for rm in managers:
        rm.shutdown()


def test_expected_only_for_an_isr_follower_whose_leader_is_gone_or_that_is_preferred(
    make_manager: Callable[[ClusterView], ReplicaManager],
) -> None:
    # the leader (2) is not a live broker; this broker (1) is in the ISR: expected
    rm = make_manager(view(leader=2, epoch=3, replicas=(2, 1), isr=(2, 1), live={1}))
    assert rm.leadership_expected("t", 0)
    assert not rm.leadership_expected("t", 1)  # not hosted
    store: Any = rm.metadata
    # a live leader, this broker not preferred: a stale client, answered at once
    store.publish(view(leader=2, epoch=4, replicas=(2, 1), isr=(2, 1), live={1, 2}))
    assert not rm.leadership_expected("t", 0)
    # this broker is the preferred replica: a preferred election may be on its way
    store.publish(view(leader=2, epoch=5, replicas=(1, 2), isr=(2, 1), live={1, 2}))
    assert rm.leadership_expected("t", 0)
    # out of the ISR: it cannot be elected (no unclean election here)
    store.publish(view(leader=2, epoch=6, replicas=(1, 2), isr=(2,), live={1}))
    assert not rm.leadership_expected("t", 0)
    # the leader
    store.publish(view(leader=1, epoch=7, replicas=(1, 2), isr=(1,), live={1}))
    assert rm.get_partition("t", 0) is not None and rm.get_partition("t", 0).is_leader  # type: ignore[union-attr]
    assert not rm.leadership_expected("t", 0)


def test_the_wait_ends_when_the_state_arrives_or_at_its_deadline(
    make_manager: Callable[[ClusterView], ReplicaManager],
) -> None:
    dead_leader = view(leader=2, epoch=3, replicas=(2, 1), isr=(2, 1), live={1})
    rm = make_manager(dead_leader)
    store: Any = rm.metadata

    async def elected() -> bool:
        waiting = asyncio.ensure_future(rm.wait_for_leadership([("t", 0)], 60_000))
        await asyncio.sleep(0)
        assert not waiting.done()
        store.publish(view(leader=1, epoch=4, replicas=(2, 1), isr=(1,), live={1}))
        await asyncio.wait_for(waiting, 30)
        part = rm.get_partition("t", 0)
        return part is not None and part.is_leader

    assert asyncio.run(elected())

    async def nothing_arrives() -> None:
        # nothing changes: the deadline (a short one here) ends the wait
        await asyncio.wait_for(rm.wait_for_leadership([("t", 0)], 10), 30)

    store.publish(replace(dead_leader, topics=MappingProxyType({})))  # the topic goes away
    store.publish(view(leader=2, epoch=5, replicas=(2, 1), isr=(2, 1), live={1}))
    assert rm.leadership_expected("t", 0)
    asyncio.run(nothing_arrives())


class ElectedReplicaManager(FakeReplicaManager):
    """Refuses partition 0 as not its leader until :meth:`wait_for_leadership` has run (the
    state arrived meanwhile), if ``elected``."""

    def __init__(self, *, expected: bool, elected: bool) -> None:
        super().__init__()
        self.expected = expected
        self.elected = elected
        self.leader = False
        self.waits: list[tuple[list[tuple[str, int]], int]] = []

    def append_records(self, topic: str | None, partition: int, records: Any, **kw: Any) -> Any:
        self.appends.append((topic, partition, len(records)))
        if not self.leader:
            return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return AppendResult(ErrorCode.NONE, AppendInfo(41, 42, -1, 41, -1, 0, 2, len(records)))

    def leadership_expected(self, topic: str, partition: int) -> bool:
        return self.expected

    async def wait_for_leadership(self, partitions: list[tuple[str, int]], timeout_ms: int) -> None:
        self.waits.append((partitions, timeout_ms))
        self.leader = self.elected


@pytest.fixture(scope="module")
def registry() -> Any:
    return load_handlers()


def _produce(rm: ElectedReplicaManager, registry: Any, acks: int = 1) -> Any:
    dispatcher = Dispatcher(services(rm), registry)
    conn = FakeConnection(session())
    response = call(dispatcher, conn, produce("t", acks=acks), 9)
    return response.responses[0].partition_responses[0], conn


@pytest.mark.parametrize(
    ("expected", "elected", "error", "waits", "appends"),
    [
        # the leadership arrives during the wait: appended, counted once, as produced
        (True, True, ErrorCode.NONE, 1, 2),
        # it does not come: refused after the wait
        (True, False, ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 2),
        # led by another live broker (a stale client): refused at once
        (False, True, ErrorCode.NOT_LEADER_OR_FOLLOWER, 0, 1),
    ],
)
def test_a_produce_waits_only_for_an_expected_leadership(
    registry: Any, expected: bool, elected: bool, error: ErrorCode, waits: int, appends: int
) -> None:
    rm = ElectedReplicaManager(expected=expected, elected=elected)
    answer, conn = _produce(rm, registry)
    assert answer.error_code == error
    assert answer.base_offset == (41 if error == ErrorCode.NONE else -1)
    assert rm.appends == [("t", 0, rm.appends[0][2])] * appends
    # at most the request's timeout (1 s in this request)
    assert rm.waits == [([("t", 0)], 1000)] * waits
    counters = conn.request_metrics.topics["t"]
    assert (counters[PRODUCE_REQUESTS], counters[FAILED_PRODUCE]) == (1, int(error != 0))


def test_the_wait_is_not_pipelined(registry: Any) -> None:
    """The connection waits for the answer before it handles the next request (a Deferred would
    let it go on), so an idempotent producer's next request is appended after this one."""
    rm = ElectedReplicaManager(expected=True, elected=True)
    dispatcher = Dispatcher(services(rm), registry)
    frame = encode_request(produce("t"), 9, 7, "test")
    result = dispatcher.handle(FakeConnection(session()), memoryview(frame)[4:])  # type: ignore[arg-type]
    assert not isinstance(result, Deferred) and inspect.isawaitable(result)
    asyncio.run(awaited(result))
    assert len(rm.appends) == 2
