"""Transaction version 2 on the produce path (KIP-890 part 2): a partition leader adds a
producer's partition to its transaction; while the coordinator is still ending the producer's
last transaction (CONCURRENT_TRANSACTIONS) the leader asks again after
``add.partitions.to.txn.retry.backoff.ms``, with new verification guards, for up to
``add.partitions.to.txn.retry.backoff.max.ms``, as Kafka's does, before the producer is
answered NOT_ENOUGH_REPLICAS. The coordinator is scripted: when it finishes ending a
transaction cannot be produced for real at a chosen moment."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from broker.coordinators.scheduler import Answer
from broker.handlers import produce as handler
from broker.replication.txn_verification import ProduceVerification
from protocol.error_codes import ErrorCode
from storage.producer_state import VerificationGuard

TP = ("t", 0)
BATCHES: dict[Any, Any] = {TP: SimpleNamespace(producer_id=7, producer_epoch=1, base_sequence=0)}


class Coordinator:
    """Answers each add with the next scripted error (NONE once the script is done)."""

    def __init__(self, *script: ErrorCode) -> None:
        self.script = list(script)
        self.asked: list[bool] = []

    def add_or_verify(self, txn_id, pid, epoch, partitions, callback, *, add: bool) -> None:
        self.asked.append(add)
        code = self.script.pop(0) if self.script else ErrorCode.NONE
        callback({} if code == ErrorCode.NONE else dict.fromkeys(partitions, code))


class ReplicaManager:
    def __init__(self) -> None:
        self.guards: list[VerificationGuard] = []

    def start_transaction_verification(self, pid, epoch, sequences) -> ProduceVerification:
        verification = ProduceVerification(pid, epoch)
        for tp in sequences:
            verification.guards[tp] = VerificationGuard()
            self.guards.append(verification.guards[tp])
        return verification


def _ctx(coordinator: Coordinator, *, max_ms: int = 100) -> Any:
    config = {
        "transaction.version": 2,
        "transaction.partition.verification.enable": True,
        "add.partitions.to.txn.retry.backoff.ms": 1,
        "add.partitions.to.txn.retry.backoff.max.ms": max_ms,
        "request.timeout.ms": 30000,
    }
    services = SimpleNamespace(
        transactions=coordinator,
        replica_manager=ReplicaManager(),
        config=config,
        metadata=SimpleNamespace(view=SimpleNamespace(features={})),
    )
    return SimpleNamespace(services=services, api_version=12)


def _appended(monkeypatch: pytest.MonkeyPatch) -> list[ProduceVerification]:
    seen: list[ProduceVerification] = []

    def fake_produce(ctx, request, txn_id, verification):
        seen.append(verification)
        return "answered"

    monkeypatch.setattr(handler, "_produce", fake_produce)
    return seen


def _run(ctx: Any) -> Any:
    started = handler._start_verification(ctx, "txn", BATCHES)
    assert started is not None
    verification, answer, add = started
    assert add and answer is not None and handler._concurrent(answer.value)

    async def go() -> Any:
        return await handler._verified_then_appended(
            ctx, None, "txn", BATCHES, (verification, answer, add)
        )

    return asyncio.run(go())


def test_the_leader_asks_again_while_the_last_transaction_ends(monkeypatch) -> None:
    seen = _appended(monkeypatch)
    coordinator = Coordinator(ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.CONCURRENT_TRANSACTIONS)
    ctx = _ctx(coordinator)
    assert _run(ctx) == "answered"
    assert coordinator.asked == [True, True, True]
    (verification,) = seen
    assert verification.errors == {}
    # the append carries the guard of the last verification, not the first one's
    guards = ctx.services.replica_manager.guards
    assert len(guards) == 3 and verification.guard(TP) is guards[-1]


def test_past_the_retry_time_the_producer_is_told_to_retry(monkeypatch) -> None:
    seen = _appended(monkeypatch)
    coordinator = Coordinator(*[ErrorCode.CONCURRENT_TRANSACTIONS] * 1000)
    assert _run(_ctx(coordinator, max_ms=20)) == "answered"
    (verification,) = seen
    code, message = verification.errors[TP]
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS and "CONCURRENT_TRANSACTIONS" in (message or "")
    assert 1 < len(coordinator.asked) < 1000


def test_verification_alone_is_not_retried(monkeypatch) -> None:
    seen = _appended(monkeypatch)
    coordinator = Coordinator(ErrorCode.CONCURRENT_TRANSACTIONS)
    ctx = _ctx(coordinator)
    ctx.api_version = 11
    started = handler._start_verification(ctx, "txn", BATCHES)
    assert started is not None
    verification, answer, add = started
    assert not add and answer is not None and answer.ready

    async def go() -> Any:
        return await handler._verified_then_appended(
            ctx, None, "txn", BATCHES, (verification, answer, add)
        )

    asyncio.run(go())
    assert coordinator.asked == [False]
    assert seen[0].errors[TP][0] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert isinstance(answer, Answer)
