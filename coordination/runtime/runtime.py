"""Coordinators as state machines over a log (Kafka's ``CoordinatorRuntime``, much smaller).

A coordinator that keeps its state in an internal topic (groups and offsets in
``__consumer_offsets``; transactions in ``__transaction_state``) is split into **shards**, one per
partition of that topic. This runtime owns the shards' lifecycle and their writes; the shards
own the logic.

* **Loading.** When this broker becomes leader of a partition, :meth:`CoordinatorRuntime.
  begin_loading` makes a new shard and returns a load id; requests for it are answered
  COORDINATOR_LOAD_IN_PROGRESS until :meth:`~CoordinatorRuntime.complete_loading` replays the
  partition's records into it (a load superseded by a later begin or an unload is dropped).
  :meth:`~CoordinatorRuntime.unload` forgets the shard when leadership moves (its waiters are
  answered NOT_COORDINATOR); a partition never owned answers NOT_COORDINATOR.
* **Locking.** Each shard has its own lock, held around everything that touches the shard: the
  requests routed to it (:meth:`~CoordinatorRuntime.with_shard`), its timers and its write
  callbacks. Shards never share state, so two partitions' groups never wait for each other.
* **Writes.** A shard changes state only by appending records through
  :meth:`ShardContext.write`; the records go to the injected :class:`CoordinatorLog`, whose
  ``append`` calls back **once the write is committed** (today right after the local append; with
  replication, once the partition's ISR has it, possibly later and on another thread). The
  shard's callback then runs with the shard's lock held: only there does the shard apply the
  change and answer its caller, so nothing is acknowledged before it is durable, and a failed
  write changes nothing. A callback that arrives after the shard was unloaded is answered
  NOT_COORDINATOR without touching any state.
* **Time.** Timers go through the injected :class:`Scheduler`; the clock is a parameter. Nothing
  here owns a loop, a thread or a socket (the broker's glue in ``broker.coordinators`` does).

Thread-safety: every public method may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, NamedTuple, Protocol, TypeVar

from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

#: A record of an internal topic: (key, value); value None is a tombstone.
Record = tuple[bytes, bytes | None]


class TransactionalRecord(NamedTuple):
    """A record a transactional producer's offsets commit wrote (KIP-98's TxnOffsetCommit): it
    counts only once its transaction's commit marker follows. ``offset``: its offset in the
    partition (-1: unknown)."""

    producer_id: int
    key: bytes
    value: bytes | None
    offset: int = -1


class OffsetRecord(NamedTuple):
    """A plain record read back from the partition, with its offset (Kafka's loaders replay
    each record with its offset)."""

    key: bytes
    value: bytes | None
    offset: int


class TransactionMarker(NamedTuple):
    """A commit or abort marker of a producer's transaction in the partition."""

    producer_id: int
    committed: bool


#: What a shard replays: plain records (with their offsets, or without), transactional ones,
#: and markers, in log order.
LoadedRecord = Record | OffsetRecord | TransactionalRecord | TransactionMarker
#: Called once a write is committed (None) or has failed (its error code).
WriteCallback = Callable[[ErrorCode | None], None]
#: Called with the offset of a write's first record once it is appended (before its
#: WriteCallback); the write's records take consecutive offsets from there.
AppendedCallback = Callable[[int], None]


def loaded_offset(item: LoadedRecord) -> int:
    """The offset of a replayed record (-1 when the log did not say)."""
    if isinstance(item, OffsetRecord | TransactionalRecord):
        return item.offset
    return -1


T = TypeVar("T")


class Timer(Protocol):
    """What a :class:`Scheduler` returns: something to cancel (from any thread)."""

    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Runs callbacks later. The broker implements it on its main event loop; tests with a fake
    clock. Callbacks run on the scheduler's thread, never inside ``schedule``."""

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...

    def soon(self, callback: Callable[[], None]) -> None:
        """Runs ``callback`` once the calling thread is done with what it is doing now: on
        that thread's own loop if it runs one (so after the request it is handling is
        answered), else as ``schedule(0, callback)``; never inside ``soon``."""

    def now_ms(self) -> int:
        """The clock delays count in (monotonic milliseconds); callable from any thread."""
        ...


class CoordinatorLog(Protocol):
    """Where shards' records go: the internal topic's partitions."""

    def append(
        self,
        partition: int,
        records: Sequence[Record],
        callback: WriteCallback,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        on_appended: AppendedCallback | None = None,
    ) -> None:
        """Appends ``records`` in one batch to ``partition`` (led by this broker) and calls
        ``callback`` exactly once: None when the batch is committed, else the error code (e.g.
        NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR). It may be called before ``append``
        returns. With a ``producer_id`` the batch is transactional, that producer's (a
        TxnOffsetCommit). ``on_appended`` (if given) learns the batch's base offset once it is
        appended, before ``callback``."""


class CoordinatorShard(Protocol):
    """What the runtime needs of a shard."""

    def replay(self, records: Iterable[LoadedRecord]) -> None:
        """Loads the partition's records, in log order (called once, before :meth:`loaded`)."""

    def loaded(self) -> None:
        """The shard now serves requests (start its timers)."""

    def unloaded(self, error: ErrorCode) -> None:
        """The shard no longer serves requests: cancel its timers, answer its waiters with
        ``error`` (NOT_COORDINATOR when leadership moved, COORDINATOR_NOT_AVAILABLE at
        shutdown). Called with its lock held."""


S = TypeVar("S", bound=CoordinatorShard)


class ShardContext:
    """What a shard is given: its partition, its lock, writes, timers and the clock."""

    def __init__(
        self,
        partition: int,
        log_: CoordinatorLog,
        scheduler: Scheduler,
        clock: Callable[[], int],
    ) -> None:
        self.partition = partition
        #: held around every use of the shard (reentrant: write callbacks may run inside write)
        self.lock = threading.RLock()
        self._log = log_
        self._scheduler = scheduler
        self.clock = clock
        #: False once unloaded: late callbacks and timers then do nothing
        self.active = True

    def now_ms(self) -> int:
        """Wall-clock milliseconds (commit timestamps, state timestamps)."""
        return self.clock()

    def monotonic_ms(self) -> int:
        """The scheduler's clock (deadlines)."""
        return self._scheduler.now_ms()

    def write(
        self,
        records: Sequence[Record],
        callback: WriteCallback,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        on_appended: AppendedCallback | None = None,
    ) -> None:
        """Appends ``records`` (a transactional batch of ``producer_id`` when given);
        ``callback`` runs with the shard's lock held once they are committed (None) or failed
        (error code); NOT_COORDINATOR when the shard was unloaded meanwhile. ``on_appended``
        learns the first record's offset once appended (before ``callback``). Call with the
        lock held."""

        def done(error: ErrorCode | None) -> None:
            with self.lock:
                callback(error if self.active else ErrorCode.NOT_COORDINATOR)

        if not records:
            done(None)
            return
        if producer_id < 0 and on_appended is None:
            self._log.append(self.partition, records, done)
        else:
            self._log.append(
                self.partition,
                records,
                done,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                on_appended=on_appended,
            )

    def schedule(self, delay_ms: int, fn: Callable[[], None]) -> Timer:
        """Runs ``fn`` after ``delay_ms`` with the shard's lock held, unless the shard was
        unloaded by then."""

        def run() -> None:
            with self.lock:
                if self.active:
                    fn()

        return self._scheduler.schedule(max(delay_ms, 0), run)

    def soon(self, fn: Callable[[], None]) -> None:
        """Runs ``fn`` with the shard's lock held once the calling thread is done with what it
        is doing now (:meth:`Scheduler.soon`), unless the shard was unloaded by then."""

        def run() -> None:
            with self.lock:
                if self.active:
                    fn()

        self._scheduler.soon(run)


class _Slot(Generic[S]):
    __slots__ = ("context", "load_id", "loading", "shard")

    def __init__(self, shard: S, context: ShardContext, load_id: int) -> None:
        self.shard = shard
        self.context = context
        self.load_id = load_id
        self.loading = True


class CoordinatorRuntime(Generic[S]):
    """Shards of one internal topic, their loading and their writes. See the module docstring.

    ``new_shard(context)`` makes an empty shard for a partition."""

    def __init__(
        self,
        name: str,
        new_shard: Callable[[ShardContext], S],
        coordinator_log: CoordinatorLog,
        scheduler: Scheduler,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.name = name
        self._new_shard = new_shard
        self._log = coordinator_log
        self._scheduler = scheduler
        self._clock = clock
        self._lock = threading.Lock()
        self._slots: dict[int, _Slot[S]] = {}
        self._load_ids = 0
        self._active = False

    # -- lifecycle ---------------------------------------------------------------------------

    def startup(self) -> None:
        self._active = True

    def shutdown(self) -> None:
        """Unloads every shard (their waiters are answered COORDINATOR_NOT_AVAILABLE...) and
        refuses requests from now on."""
        self._active = False
        with self._lock:
            slots = list(self._slots.values())
            self._slots.clear()
        for slot in slots:
            self._close(slot, ErrorCode.COORDINATOR_NOT_AVAILABLE)

    @property
    def is_active(self) -> bool:
        return self._active

    # -- loading -----------------------------------------------------------------------------

    def begin_loading(self, partition: int) -> int:
        """This broker now leads ``partition``: a new shard, loading (requests for it answer
        COORDINATOR_LOAD_IN_PROGRESS) until :meth:`complete_loading` with the returned id."""
        with self._lock:
            self._load_ids += 1
            load_id = self._load_ids
            context = ShardContext(partition, self._log, self._scheduler, self._clock)
            old = self._slots.get(partition)
            self._slots[partition] = _Slot(self._new_shard(context), context, load_id)
        if old is not None:
            self._close(old, ErrorCode.NOT_COORDINATOR)
        return load_id

    def complete_loading(
        self, partition: int, load_id: int, records: Iterable[LoadedRecord]
    ) -> bool:
        """Replays ``records`` (the partition's, in log order) into the shard; False when the
        load was superseded (leadership moved meanwhile)."""
        with self._lock:
            slot = self._slots.get(partition)
            if slot is None or slot.load_id != load_id or not slot.loading:
                return False
        with slot.context.lock:
            slot.shard.replay(records)
            with self._lock:
                if self._slots.get(partition) is not slot:
                    return False
                slot.loading = False
            slot.shard.loaded()
        return True

    def unload(self, partition: int) -> None:
        """This broker no longer leads ``partition``: forget its shard."""
        with self._lock:
            slot = self._slots.pop(partition, None)
        if slot is not None:
            self._close(slot, ErrorCode.NOT_COORDINATOR)

    @staticmethod
    def _close(slot: _Slot[S], error: ErrorCode) -> None:
        with slot.context.lock:
            slot.context.active = False
            slot.shard.unloaded(error)

    @property
    def loading_partitions(self) -> frozenset[int]:
        with self._lock:
            return frozenset(p for p, s in self._slots.items() if s.loading)

    def coordinates(self, partition: int) -> bool:
        """Whether this runtime owns (or is loading) ``partition``."""
        with self._lock:
            return partition in self._slots

    def is_loading(self, partition: int) -> bool:
        with self._lock:
            slot = self._slots.get(partition)
            return slot is not None and slot.loading

    # -- requests ----------------------------------------------------------------------------

    def shard_error(self, partition: int) -> ErrorCode | None:
        """Why requests for ``partition`` cannot be served now, or None."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        with self._lock:
            slot = self._slots.get(partition)
        if slot is None:
            return ErrorCode.NOT_COORDINATOR
        if slot.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def with_shard(
        self, partition: int, fn: Callable[[S], T], on_error: Callable[[ErrorCode], T]
    ) -> T:
        """``fn(shard)`` with the shard's lock held, or ``on_error(code)`` when the partition
        cannot be served (not active, not owned, loading)."""
        if not self._active:
            return on_error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        # a lock-free read: the map is only ever changed under self._lock, and a slot taken
        # away meanwhile is found inactive below
        slot = self._slots.get(partition)
        if slot is None:
            return on_error(ErrorCode.NOT_COORDINATOR)
        with slot.context.lock:
            if slot.loading:
                return on_error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            if not slot.context.active:
                return on_error(ErrorCode.NOT_COORDINATOR)
            return fn(slot.shard)

    def loaded_shards(self) -> Iterator[tuple[S, threading.RLock]]:
        """The loaded shards with their locks (for listings and periodic work)."""
        with self._lock:
            slots = [s for s in self._slots.values() if not s.loading]
        for slot in slots:
            yield slot.shard, slot.context.lock
