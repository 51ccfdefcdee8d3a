"""Incremental fetch sessions (KIP-227; Kafka's ``FetchSession``, ``FetchSessionCache`` and the
``FetchContext`` rules of ``FetchManager``).

A client that follows many partitions sends them all once, in a *full* fetch with session id 0
and epoch 0; the broker answers with a new session id and remembers, per partition, what the
client asked (fetch offset, max bytes, epochs) and what it was last told (high watermark, log
start offset). Later *incremental* fetches carry the session id and the next epoch, only the
partitions whose request changed and the ones to forget; the broker reads every partition of
the session and answers only those with something new: records, a changed high watermark or log
start offset, an error, or a diverging epoch.

The request's (session id, epoch) decide the context, as in Kafka's ``FetchManager.newContext``:

* epoch -1 (``FINAL_EPOCH``) or 0 (``INITIAL_EPOCH``) is a full fetch: a session named with it
  is closed; with epoch 0 a new session is created after the read (when the cache has or can
  make room), with -1 none is ("sessionless", what clients without sessions send);
* any other epoch is incremental: an unknown session answers ``FETCH_SESSION_ID_NOT_FOUND``, an
  epoch other than the one expected ``INVALID_FETCH_SESSION_EPOCH``, a session created with
  topic ids (Fetch v13+) used by a request without them, or the reverse,
  ``FETCH_SESSION_TOPIC_ID_ERROR``; a session left empty by its forgotten partitions is closed
  and the fetch answered without a session.
* Partitions that had records in a response move to the end of their session, so the next
  response (bounded by ``max_bytes``) starts with the others (Kafka's round robin).

The cache (``max.incremental.fetch.session.cache.slots`` sessions) evicts as Kafka's
``FetchSessionCacheShard.tryEvict`` does when a new session needs a slot: first the session
least recently used if it has been idle longer than ``min.incremental.fetch.session.eviction.ms``;
otherwise the least valuable evictable session if the new one is worth more, comparing
(privileged, partition count): followers' sessions are *privileged* and win over consumers',
bigger sessions over smaller ones. A session becomes evictable by others once it is older than
the eviction time; a consumer's session is evictable by a follower's at once.

Thread-safety: one lock guards the cache and every session's partitions; the work under it is
short and never waits. A session's :class:`CachedPartition` objects double as the reads of its
incremental fetches (no per-request copies); two requests using one session at once (a client
that sends its next epoch before the answer) are told apart by the epoch check when the response
is built, as in Kafka.
"""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from broker.metrics import MetricSamples
from broker.replication.partition import LogReadResult
from broker.replication.replica_manager import FetchRead
from protocol.error_codes import ErrorCode

#: a fetch without a session (requests and responses)
INVALID_SESSION_ID = 0
#: a full fetch that asks for a new session
INITIAL_EPOCH = 0
#: a full fetch that asks for no session (and closes the one it names)
FINAL_EPOCH = -1
INT32_MAX = 0x7FFFFFFF

#: a partition's key in a session: (topic id or, before Fetch v13, topic name, partition)
PartitionKey = tuple[Any, int]

_NO_RESULT = LogReadResult(ErrorCode.NONE)


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``): wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


class CachedPartition(FetchRead):
    """One partition of a session: what the client last asked (the :class:`FetchRead` fields,
    so the partition is read as it is) and what it was last told."""

    __slots__ = ("cached_high_watermark", "cached_log_start_offset")

    def __init__(
        self,
        name: str | None,
        topic_id: Any,
        index: int,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        last_fetched_epoch: int = -1,
        log_start_offset: int = -1,
    ) -> None:
        super().__init__(
            name,
            topic_id,
            index,
            fetch_offset,
            max_bytes,
            current_leader_epoch,
            None,
            last_fetched_epoch,
            log_start_offset,
        )
        self.cached_high_watermark = -1
        self.cached_log_start_offset = -1

    @classmethod
    def of_read(cls, read: FetchRead) -> CachedPartition:
        """A full fetch's partition, remembered with what its response said."""
        cp = cls(
            read.name,
            read.topic_id,
            read.index,
            read.fetch_offset,
            read.max_bytes,
            read.current_leader_epoch,
            read.last_fetched_epoch,
            read.log_start_offset,
        )
        result = read.result
        cp.cached_high_watermark = result.high_watermark
        cp.cached_log_start_offset = result.log_start_offset
        return cp

    def update_request(self, new: CachedPartition) -> None:
        """The client sent this partition again: its new fetch parameters."""
        self.max_bytes = new.max_bytes
        self.fetch_offset = new.fetch_offset
        self.log_start_offset = new.log_start_offset
        self.current_leader_epoch = new.current_leader_epoch
        self.last_fetched_epoch = new.last_fetched_epoch

    def must_respond(self, result: LogReadResult, update: bool) -> bool:
        """Whether an incremental response includes this partition (Kafka's
        ``maybeUpdateResponseData``): records, a changed high watermark or log start offset, an
        error or a diverging epoch. With ``update``, remembers what the response tells; an error
        forgets the high watermark, so the partition is sent again once the error is gone."""
        must = False
        region = result.region
        if region is not None and region.length > 0:
            must = True
        if self.cached_high_watermark != result.high_watermark:
            must = True
            if update:
                self.cached_high_watermark = result.high_watermark
        if self.cached_log_start_offset != result.log_start_offset:
            must = True
            if update:
                self.cached_log_start_offset = result.log_start_offset
        if result.error != ErrorCode.NONE:
            if update:
                self.cached_high_watermark = -1
            must = True
        if result.diverging_epoch is not None:
            must = True
        return must


class FetchSession:
    """A session: its partitions in order, and the cache's bookkeeping."""

    __slots__ = (
        "cached_size",
        "creation_ms",
        "epoch",
        "id",
        "last_used_ms",
        "partitions",
        "privileged",
        "uses_topic_ids",
    )

    def __init__(
        self,
        session_id: int,
        *,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
        now_ms: int,
    ) -> None:
        self.id = session_id
        self.privileged = privileged
        self.uses_topic_ids = uses_topic_ids
        #: insertion-ordered: the order partitions are read and answered in
        self.partitions = partitions
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        #: the epoch the next request must carry
        self.epoch = next_epoch(INITIAL_EPOCH)
        #: the partition count the cache last accounted for (-1: not in the cache)
        self.cached_size = -1

    def __repr__(self) -> str:
        return (
            f"FetchSession(id={self.id}, privileged={self.privileged}, "
            f"partitions={len(self.partitions)}, epoch={self.epoch})"
        )

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)


class SessionError(Exception):
    """A fetch that cannot use the session it names; answered with ``error_code`` and no
    partitions."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class FetchSessionCache:
    """The broker's sessions (see the module docstring).

    ``clock_ms`` is for tests; the broker uses the monotonic clock."""

    def __init__(
        self,
        *,
        max_entries: int,
        eviction_ms: int,
        clock_ms: Callable[[], int] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._clock_ms: Callable[[], int] = clock_ms or (lambda: time.monotonic_ns() // 1_000_000)
        self._random = rng or random.SystemRandom()
        self._lock = threading.Lock()
        self._sessions: dict[int, FetchSession] = {}
        #: sessions by last use, least recent first (touches only move forward in time)
        self._last_used: OrderedDict[int, FetchSession] = OrderedDict()
        #: sessions any new session may evict (older than the eviction time)
        self._evictable_by_all: dict[int, FetchSession] = {}
        #: sessions a follower's new session may evict (consumers', and old followers')
        self._evictable_by_privileged: dict[int, FetchSession] = {}
        self._partitions = 0
        #: sessions evicted to make room (Kafka's IncrementalFetchSessionEvictionsPerSec count)
        self.evictions = 0
        #: full fetches that asked for a session and got none (the cache was full)
        self.refused = 0

    # -- what the handler calls ----------------------------------------------------------------

    def now_ms(self) -> int:
        return int(self._clock_ms())

    def close(self, session_id: int) -> bool:
        """A full fetch names the session: it is closed. Returns whether it existed."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return False
            self._remove(session)
            return True

    def create(
        self,
        reads: Iterable[FetchRead],
        *,
        privileged: bool,
        uses_topic_ids: bool,
    ) -> int:
        """After a full fetch with epoch 0: a session of its partitions (each with what the
        response told), if there is room or some session may be evicted for it. Returns the new
        session id, or 0 (no session)."""
        partitions: dict[PartitionKey, CachedPartition] = {}
        for read in reads:
            key = (read.topic_id if uses_topic_ids else read.name, read.index)
            partitions.pop(key, None)  # a repeated partition: the last one wins, at the end
            partitions[key] = CachedPartition.of_read(read)
        now = self.now_ms()
        with self._lock:
            if len(self._sessions) >= self.max_entries and not self._try_evict(
                privileged, len(partitions), now
            ):
                self.refused += 1
                return INVALID_SESSION_ID
            session_id = self._new_session_id()
            session = FetchSession(
                session_id,
                privileged=privileged,
                uses_topic_ids=uses_topic_ids,
                partitions=partitions,
                now_ms=now,
            )
            self._sessions[session_id] = session
            self._touch(session, now)
            return session_id

    def incremental(
        self,
        session_id: int,
        epoch: int,
        *,
        uses_topic_ids: bool,
        changed: Sequence[CachedPartition],
        forgotten: Iterable[PartitionKey],
    ) -> FetchSession | None:
        """An incremental fetch: checks the session and its epoch, applies the request's
        changed and forgotten partitions and moves the epoch on. Returns the session, or None
        when it has no partition left (it is closed; the fetch goes on without a session).
        Raises :class:`SessionError` for an unknown session, a wrong epoch or a topic-id
        mismatch (the session is left as it was)."""
        now = self.now_ms()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise SessionError(
                    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, f"no fetch session {session_id}"
                )
            if session.epoch != epoch:
                raise SessionError(
                    ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                    f"fetch session {session_id} expected epoch {session.epoch}, got {epoch}",
                )
            if session.uses_topic_ids != uses_topic_ids:
                raise SessionError(
                    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
                    f"fetch session {session_id} was created "
                    f"{'with' if session.uses_topic_ids else 'without'} topic ids",
                )
            parts = session.partitions
            for cp in changed:
                key = (cp.topic_id if uses_topic_ids else cp.name, cp.index)
                cached = parts.get(key)
                if cached is None:
                    parts[key] = cp
                else:
                    cached.update_request(cp)
            for key in forgotten:
                parts.pop(key, None)
            if not parts:
                self._remove(session)
                return None
            self._touch(session, now)
            session.epoch = next_epoch(session.epoch)
            return session

    def respond(
        self, session: FetchSession, request_epoch: int, reads: Sequence[CachedPartition]
    ) -> list[CachedPartition] | None:
        """The partitions an incremental response carries, in session order, remembering what
        it tells and moving those with records to the session's end; None when another request
        used the session meanwhile (the answer is then INVALID_FETCH_SESSION_EPOCH)."""
        with self._lock:
            if session.epoch != next_epoch(request_epoch):
                return None
            out = []
            moved = []
            for cp in reads:
                result = cp.result
                if cp.must_respond(result, True):
                    out.append(cp)
                    region = result.region
                    if region is not None and region.length > 0:
                        moved.append(cp)
            if moved:
                parts = session.partitions
                uses_ids = session.uses_topic_ids
                for cp in moved:
                    key = (cp.topic_id if uses_ids else cp.name, cp.index)
                    if parts.get(key) is cp:
                        del parts[key]
                        parts[key] = cp
            return out

    def partitions_of(self, session: FetchSession) -> list[CachedPartition]:
        """The session's partitions, in order, as this request reads them (results reset)."""
        with self._lock:
            reads = list(session.partitions.values())
        for cp in reads:
            cp.result = _NO_RESULT
        return reads

    def epoch_is_current(self, session: FetchSession, request_epoch: int) -> bool:
        with self._lock:
            return session.epoch == next_epoch(request_epoch)

    # -- introspection -------------------------------------------------------------------------

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    @property
    def size(self) -> int:
        return len(self._sessions)

    @property
    def total_partitions(self) -> int:
        return self._partitions

    def metrics(self) -> list[MetricSamples]:
        """Kafka's FetchSessionCache MBeans, named as the Prometheus JMX exporter names them."""
        return [
            (
                "kafka_server_fetchsessioncache_numincrementalfetchsessions",
                "gauge",
                "Incremental fetch sessions in the cache.",
                [("", float(self.size))],
            ),
            (
                "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                "gauge",
                "Partitions cached over all incremental fetch sessions.",
                [("", float(self.total_partitions))],
            ),
            (
                "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
                "counter",
                "Incremental fetch sessions evicted to make room for new ones.",
                [("", float(self.evictions))],
            ),
        ]

    # -- the cache's bookkeeping (under the lock) ----------------------------------------------

    def _new_session_id(self) -> int:
        while True:
            session_id = self._random.randint(1, INT32_MAX)
            if session_id not in self._sessions:
                return session_id

    def _touch(self, session: FetchSession, now: int) -> None:
        """Kafka's ``touch``: last use now; size and evictability recomputed."""
        session.last_used_ms = now
        self._last_used[session.id] = session
        self._last_used.move_to_end(session.id)
        if session.cached_size >= 0:
            self._partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self._partitions += session.cached_size
        old = now - session.creation_ms > self.eviction_ms
        if not session.privileged or old:
            self._evictable_by_privileged[session.id] = session
        else:
            self._evictable_by_privileged.pop(session.id, None)
        if old:
            self._evictable_by_all[session.id] = session
        else:
            self._evictable_by_all.pop(session.id, None)

    def _remove(self, session: FetchSession) -> None:
        if self._sessions.pop(session.id, None) is None:
            return
        self._last_used.pop(session.id, None)
        self._evictable_by_all.pop(session.id, None)
        self._evictable_by_privileged.pop(session.id, None)
        if session.cached_size >= 0:
            self._partitions -= session.cached_size
        session.cached_size = -1

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        """Kafka's ``tryEvict``: a stale session (unused for longer than the eviction time)
        goes first; otherwise the least valuable evictable one, if the new session is worth
        more by (privileged, size). The scan runs only when the cache is full."""
        if not self._last_used:
            return False
        oldest = next(iter(self._last_used.values()))
        if now - oldest.last_used_ms > self.eviction_ms:
            self._remove(oldest)
            self.evictions += 1
            return True
        pool = self._evictable_by_privileged if privileged else self._evictable_by_all
        if not pool:
            return False
        victim = min(pool.values(), key=FetchSession.evictable_key)
        if (privileged, size) <= (victim.privileged, victim.cached_size):
            return False
        self._remove(victim)
        self.evictions += 1
        return True
