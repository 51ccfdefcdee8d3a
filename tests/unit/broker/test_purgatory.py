"""The purgatory: an operation completes exactly once, by an event or by its deadline."""

from __future__ import annotations

import asyncio
import threading

from broker.purgatory import DelayedOperation, DelayedOperationPurgatory


class Counter(DelayedOperation):
    """Completes once ``value[0]`` reaches ``target``."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, value: list[int], target: int, timeout_ms: int
    ) -> None:
        super().__init__(loop, timeout_ms)
        self.value = value
        self.target = target
        self.checks = 0

    def try_complete(self) -> bool:
        self.checks += 1
        if self.value[0] >= self.target:
            return self.force_complete()
        return False


async def test_completes_at_once_when_it_can() -> None:
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    op = Counter(asyncio.get_running_loop(), [5], 1, 10_000)
    assert purgatory.try_complete_else_watch(op, ["a"])
    await asyncio.wait_for(op.future, 1)
    assert not op.expired
    assert purgatory.watched == 0


async def test_an_event_completes_a_watched_operation_and_it_leaves_every_watch_list() -> None:
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    value = [0]
    op = Counter(asyncio.get_running_loop(), value, 2, 10_000)
    assert not purgatory.try_complete_else_watch(op, ["a", "b"])
    assert purgatory.watched == 1
    value[0] = 1
    assert purgatory.check_and_complete("a") == 0
    value[0] = 2
    assert purgatory.check_and_complete("b") == 1
    await asyncio.wait_for(op.future, 1)
    assert not op.expired
    assert purgatory.watched == 0
    assert purgatory.check_and_complete("a") == 0  # nothing left to check


async def test_the_deadline_completes_it_once() -> None:
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    value = [0]
    op = Counter(asyncio.get_running_loop(), value, 1, 20)
    assert not purgatory.try_complete_else_watch(op, ["a"])
    await asyncio.wait_for(op.future, 5)
    assert op.expired
    value[0] = 1
    assert purgatory.check_and_complete("a") == 0
    assert not op.force_complete()
    assert purgatory.watched == 0


async def test_completion_from_other_threads_happens_once_on_the_operations_loop() -> None:
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    value = [0]
    op = Counter(asyncio.get_running_loop(), value, 1, 10_000)
    assert not purgatory.try_complete_else_watch(op, ["a"])
    value[0] = 1
    completed: list[int] = []
    threads = [
        threading.Thread(target=lambda: completed.append(purgatory.check_and_complete("a")))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(completed) == 1
    await asyncio.wait_for(op.future, 1)


async def test_complete_all_forces_every_waiter() -> None:
    purgatory: DelayedOperationPurgatory[str] = DelayedOperationPurgatory("test")
    loop = asyncio.get_running_loop()
    ops = [Counter(loop, [0], 1, 10_000) for _ in range(3)]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["gone"])
    assert purgatory.complete_all("gone") == 3
    await asyncio.wait_for(asyncio.gather(*(op.future for op in ops)), 1)
    assert purgatory.watched == 0
