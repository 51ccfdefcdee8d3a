"""Followers fetch from their leaders (Kafka's ``ReplicaFetcherManager``, ``ReplicaFetcherThread``
and ``AbstractFetcherThread``).

:class:`ReplicaFetcherManager` keeps, for every partition this broker follows, a
:class:`PartitionFetchState` in one :class:`ReplicaFetcherThread` per (leader broker, fetcher
index): ``num.replica.fetchers`` threads per source broker, partitions spread by hash, so one
Fetch request carries every partition a thread follows from that leader. Each thread owns a
blocking connection to its leader (:mod:`broker.interbroker`) and loops:

1. **Truncation** (KIP-101, KIP-279), for partitions that just became followers of a leader
   epoch: an OffsetForLeaderEpoch request for this log's latest epoch; the answer (the leader's
   largest epoch at or below it, and that epoch's end offset) gives the offset from which the
   logs agree (:func:`truncation_offset`); the log is truncated there, and when the leader did
   not know our epoch the round repeats with our next older one.
2. **Fetch** (``replica_id`` = this broker; ``replica.fetch.*`` settings), every partition from
   its log end, with its last fetched epoch (Fetch v12+): the leader answers a divergence with
   ``DivergingEpoch`` instead of records, handled like (1). Batches are appended as they are
   (:meth:`~broker.replication.partition.Partition.append_as_follower`), then the leader's high
   watermark and log start offset are taken. With ``replica.fetch.session.enable`` (as Kafka's
   followers do) the thread keeps an incremental fetch session with its leader (KIP-227,
   :class:`~protocol.fetch_session.FetchSessionHandler`): after one full fetch, requests carry
   only the partitions whose fetch offset or epochs changed, and responses only the partitions
   with news; a session error or a lost connection makes the next fetch full again.

A partition whose leader answers an error (not the leader, a fenced or unknown epoch, a storage
error) waits ``replica.fetch.backoff.ms`` and is tried again; a leadership change reaches the
manager through the metadata store and replaces the partition's state. These errors are
expected while leadership moves, so they are not logged one by one; a partition that has made
no progress (no batch appended, not caught up) for ``replica.lag.time.max.ms`` is logged as
stalled, with the last thing that held it back, once per that period until it moves again.
An I/O error writing our own log (a full or failing disk) is handed to ``on_storage_error``:
the replica manager takes the log dir offline and stops fetching its partitions (Kafka's
fetcher marks the partition failed and reports the dir to its ``LogDirFailureChannel``).
Follower appends happen under the partition's lock with its leader epoch checked, so a
partition that became leader meanwhile is never written by a fetcher.

Thread-safety: :meth:`ReplicaFetcherManager.update` and :meth:`~ReplicaFetcherManager.shutdown`
are called by the replica manager (under its lock); each fetcher thread owns its connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.interbroker import InterBrokerConnection, InterBrokerUnavailable, inter_broker_endpoint
from broker.replication.partition import Partition, TopicPartition
from broker.security.inter_broker import InterBrokerSecurity
from coordination.errors import KafkaApiError
from coordination.metadata.view import ClusterView
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.fetch_session import FetchRequestData, FetchSessionHandler
from protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
    ReplicaState,
)
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from storage.errors import KafkaStorageError, StorageError
from storage.log import PartitionLog

log = logging.getLogger(__name__)

#: ``on_storage_error(partition, error)``
StorageErrorHandler = Callable[[Partition, Exception], None]

#: Fetch versions the fetchers use: v12 is the first with DivergingEpoch (and the last by name).
FETCH_VERSION = 12
#: a followed partition's fetch parameters: leader epoch, fetch offset, last fetched epoch, log
#: start offset (what the session compares to decide whether to send the partition again)
_FetchData = tuple[int, int, int, int]
#: OffsetForLeaderEpoch v3+ carries the follower's replica id; v4 is flexible.
OFFSET_FOR_LEADER_EPOCH_VERSION = 4


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The ``replica.*`` settings a fetcher honours."""

    broker_id: int
    num_fetchers: int = 1
    fetch_max_bytes: int = 1048576
    fetch_response_max_bytes: int = 10485760
    fetch_wait_max_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_backoff_ms: int = 1000
    socket_timeout_ms: int = 30000
    inter_broker_listener: str | None = None
    #: TLS/SASL of the inter-broker listener (None: plaintext)
    security: InterBrokerSecurity | None = None
    #: incremental fetch sessions with the leader (KIP-227)
    sessions: bool = True
    #: a partition making no progress for this long is logged as stalled
    #: (``replica.lag.time.max.ms``: the leader drops the follower from the ISR about then)
    stall_report_ms: int = 30000


def truncation_offset(plog: PartitionLog, leader_epoch: int, leader_end: int) -> tuple[int, bool]:
    """Where a follower truncates, given the leader's (largest epoch at or below the one asked
    for, its end offset) (Kafka's ``getOffsetTruncationState``): (offset, whether truncation is
    complete). If the leader does not know the epoch at all, to the high watermark (what is below
    it is on every ISR member); if this log has that epoch too, to the smaller of the two ends;
    if this log's epoch there is older, to its end, and ask again for it."""
    if leader_epoch < 0 or leader_end < 0:
        return min(plog.high_watermark, plog.log_end_offset), True
    epoch, end = plog.end_offset_for_epoch(leader_epoch)
    if epoch < 0:
        return min(leader_end, plog.log_end_offset), True
    if epoch == leader_epoch:
        return min(leader_end, end), True
    return min(leader_end, end), False


class PartitionFetchState:
    """A followed partition inside a fetcher thread (Kafka's ``PartitionFetchState``)."""

    __slots__ = (
        "caught_up",
        "delayed_until",
        "held_back_by",
        "lag",
        "leader_epoch",
        "partition",
        "progress_at",
        "scanned_log_end",
        "stall_reported_at",
        "truncating",
    )

    def __init__(self, partition: Partition, leader_epoch: int) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch
        #: OffsetForLeaderEpoch first (a new leader epoch), then fetching
        self.truncating = True
        self.delayed_until = 0.0
        #: records behind the leader's high watermark, as of the last answer about it
        self.lag = 0
        #: whether the last answer about it found it at the leader's high watermark (stands
        #: while incremental fetch responses leave it out: nothing new)
        self.caught_up = False
        #: the stall report's bookkeeping, done when the thread looks (once a second), not per
        #: fetch: when the partition was last seen caught up or its log end grown, the log end
        #: then, and the last error since (None: only behind the leader)
        self.progress_at = time.monotonic()
        self.scanned_log_end = partition.log_end_offset
        self.held_back_by: str | None = None
        self.stall_reported_at = 0.0

    def held_back(self, reason: str) -> None:
        self.caught_up = False
        self.held_back_by = reason

    def stall_reason(self) -> str:
        if self.held_back_by is not None:
            return self.held_back_by
        if self.truncating:
            return "truncation not complete (OffsetForLeaderEpoch)"
        return f"{self.lag} record(s) behind the leader's high watermark, none appended"

    def stalled_for(self, now: float, report_after_s: float) -> float | None:
        """Seconds without progress (not caught up, no batch appended), when a stall report is
        due (once per ``report_after_s``)."""
        end = self.partition.log_end_offset
        grew = end > self.scanned_log_end
        self.scanned_log_end = end
        if (self.caught_up and not self.truncating) or grew:
            self.progress_at = now
            self.stall_reported_at = 0.0
            self.held_back_by = None
            return None
        idle = now - self.progress_at
        if idle < report_after_s or now - self.stall_reported_at < report_after_s:
            return None
        self.stall_reported_at = now
        return idle

    def __repr__(self) -> str:
        p = self.partition
        state = "truncating" if self.truncating else f"fetching at {p.log_end_offset}"
        return f"{p.topic}-{p.index} (leader epoch {self.leader_epoch}, {state})"


class ReplicaFetcherThread(threading.Thread):
    """Fetches every partition it holds from one leader broker."""

    def __init__(
        self,
        config: FetcherConfig,
        leader_id: int,
        fetcher_id: int,
        view: Callable[[], ClusterView],
        on_storage_error: StorageErrorHandler | None = None,
    ) -> None:
        super().__init__(name=f"replica-fetcher-{fetcher_id}-broker-{leader_id}", daemon=True)
        self.config = config
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self._view = view
        self._on_storage_error = on_storage_error
        self._states: dict[TopicPartition, PartitionFetchState] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._conn: InterBrokerConnection | None = None
        self._last_failure_log = 0.0
        #: when the partitions are next looked at for a stall report (once a second at most: a
        #: fetcher of thousands of partitions may fetch many times a second)
        self._next_stall_scan = 0.0
        #: the session with the leader (None: every fetch is full and sessionless)
        self._session: FetchSessionHandler[TopicPartition, _FetchData] | None = (
            FetchSessionHandler() if config.sessions else None
        )
        #: the largest (leader high watermark - fetch offset) of the fetched partitions
        self.max_lag = 0

    # -- membership (the manager's thread) ----------------------------------------------------

    def add(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        with self._cond:
            self._states.update(states)
            self._cond.notify_all()

    def remove(self, keys: list[TopicPartition]) -> None:
        with self._cond:
            for key in keys:
                self._states.pop(key, None)

    @property
    def partition_count(self) -> int:
        return len(self._states)

    def states(self) -> dict[TopicPartition, PartitionFetchState]:
        with self._cond:
            return dict(self._states)

    def shutdown(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        conn = self._conn
        if conn is not None:
            conn.close()

    def _current(self, key: TopicPartition, state: PartitionFetchState) -> bool:
        return self._states.get(key) is state

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        backoff_s = self.config.fetch_backoff_ms / 1000
        while True:
            with self._cond:
                while not self._states and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    break
                states = dict(self._states)
            now = time.monotonic()
            ready = {k: s for k, s in states.items() if s.delayed_until <= now}
            if not ready:
                wait = min(s.delayed_until for s in states.values()) - now
                with self._cond:
                    self._cond.wait(max(min(wait, backoff_s), 0.01))
                continue
            try:
                conn = self._connection()
                truncating = {k: s for k, s in ready.items() if s.truncating}
                if truncating:
                    self._truncate(conn, truncating)
                fetching = {k: s for k, s in ready.items() if not s.truncating}
                if fetching:
                    self._fetch(conn, fetching)
            except InterBrokerUnavailable as e:
                for state in ready.values():
                    state.held_back(str(e))
                self._close()
                if self._stopped:
                    break
                now = time.monotonic()
                if now - self._last_failure_log > 10:
                    self._last_failure_log = now
                    log.warning("fetching from broker %d: %s", self.leader_id, e)
                with self._cond:
                    self._cond.wait(backoff_s)
            except Exception:
                log.exception("replica fetcher for broker %d failed", self.leader_id)
                self._close()
                with self._cond:
                    self._cond.wait(backoff_s)
            self._report_stalls(states)
        self._close()

    def _report_stalls(self, states: Mapping[TopicPartition, PartitionFetchState]) -> None:
        now = time.monotonic()
        if now < self._next_stall_scan:
            return
        self._next_stall_scan = now + 1.0
        report_after_s = self.config.stall_report_ms / 1000
        for (topic, index), state in states.items():
            idle = state.stalled_for(now, report_after_s)
            if idle is not None and self._current((topic, index), state):
                log.warning(
                    "%s-%d: no progress fetching from broker %d for %.0f s (log end %d, leader "
                    "epoch %d, %s): %s",
                    topic, index, self.leader_id, idle, state.partition.log_end_offset,
                    state.leader_epoch, "truncating" if state.truncating else "fetching",
                    state.stall_reason(),
                )  # fmt: skip

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._session is not None:
            self._session.handle_error()

    def _connection(self) -> InterBrokerConnection:
        if self._conn is not None:
            return self._conn
        broker = self._view().brokers.get(self.leader_id)
        if broker is None:
            raise InterBrokerUnavailable(f"broker {self.leader_id} is not registered")
        ep = inter_broker_endpoint(broker, self.config.inter_broker_listener)
        conn = InterBrokerConnection(
            self.leader_id,
            ep.host,
            ep.port,
            client_id=f"broker-{self.config.broker_id}-fetcher-{self.fetcher_id}",
            timeout_s=(self.config.socket_timeout_ms + self.config.fetch_wait_max_ms) / 1000,
            max_response_bytes=max(self.config.fetch_response_max_bytes * 2, 64 << 20),
            security=self.config.security,
        )
        conn.connect()
        self._conn = conn
        return conn

    def _delay(self, state: PartitionFetchState) -> None:
        state.delayed_until = time.monotonic() + self.config.fetch_backoff_ms / 1000

    # -- truncation ----------------------------------------------------------------------------

    def _truncate(
        self, conn: InterBrokerConnection, states: dict[TopicPartition, PartitionFetchState]
    ) -> None:
        asked: dict[TopicPartition, tuple[PartitionFetchState, int]] = {}
        for key, state in states.items():
            part = state.partition
            epoch = part.latest_epoch()
            if epoch < 0:
                # no epochs in this log (empty, or written without them): what is below the
                # high watermark is committed; the rest is fetched again
                plog = part.log
                if plog.log_end_offset > plog.high_watermark:
                    part.truncate_to(plog.high_watermark, leader_epoch=state.leader_epoch)
                state.truncating = False
                continue
            asked[key] = (state, epoch)
        if not asked:
            return
        by_topic: dict[str, list[OffsetForLeaderPartition]] = {}
        for (topic, index), (state, epoch) in asked.items():
            by_topic.setdefault(topic, []).append(
                OffsetForLeaderPartition(
                    partition=index, current_leader_epoch=state.leader_epoch, leader_epoch=epoch
                )
            )
        request = OffsetForLeaderEpochRequest(
            replica_id=self.config.broker_id,
            topics=[OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        version = conn.version_for(ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION)
        response = conn.request(request, version)
        for topic in response.topics:
            for p in topic.partitions:
                key = (topic.topic, p.partition)
                entry = asked.get(key)
                if entry is None:
                    continue
                state, _ = entry
                with self._cond:
                    if not self._current(key, state):
                        continue
                if p.error_code != ErrorCode.NONE:
                    self._partition_error(key, state, ErrorCode.of(p.error_code))
                    continue
                self._apply_truncation(key, state, p.leader_epoch, p.end_offset)

    def _apply_truncation(
        self, key: TopicPartition, state: PartitionFetchState, leader_epoch: int, leader_end: int
    ) -> None:
        part = state.partition
        offset, complete = truncation_offset(part.log, leader_epoch, leader_end)
        try:
            if offset < part.log_end_offset:
                log.info(
                    "%s-%d: truncating to %d (leader %d says epoch %d ends at %d)",
                    key[0], key[1], offset, self.leader_id, leader_epoch, leader_end,
                )  # fmt: skip
            # at the log end too: an epoch this broker led without appending goes from the
            # epoch cache (else the leader answers a diverging epoch for ever)
            part.truncate_to(offset, leader_epoch=state.leader_epoch)
        except (StorageError, OSError) as e:
            log.error("%s-%d: truncation failed: %s", key[0], key[1], e)
            state.held_back(f"the truncation failed: {e}")
            self._storage_error(part, e)
            self._delay(state)
            return
        state.truncating = not complete

    # -- fetch ---------------------------------------------------------------------------------

    def _fetch(
        self, conn: InterBrokerConnection, states: dict[TopicPartition, PartitionFetchState]
    ) -> None:
        cfg = self.config
        wanted: dict[TopicPartition, _FetchData] = {}
        for key, state in states.items():
            part = state.partition
            wanted[key] = (
                state.leader_epoch,
                part.log_end_offset,
                part.latest_epoch(),
                part.log_start_offset,
            )
        session = self._session
        data: FetchRequestData[TopicPartition, _FetchData] = (
            session.build(wanted)
            if session is not None
            else FetchRequestData(0, -1, dict(wanted), [])
        )
        by_topic: dict[str, list[FetchPartition]] = {}
        for (topic, index), (epoch, offset, last_epoch, log_start) in data.to_send.items():
            by_topic.setdefault(topic, []).append(
                FetchPartition(
                    partition=index,
                    current_leader_epoch=epoch,
                    fetch_offset=offset,
                    last_fetched_epoch=last_epoch,
                    log_start_offset=log_start,
                    partition_max_bytes=cfg.fetch_max_bytes,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for topic, index in data.to_forget:
            forgotten.setdefault(topic, []).append(index)
        version = conn.version_for(ApiKey.FETCH, FETCH_VERSION)
        request = FetchRequest(
            replica_id=cfg.broker_id,
            replica_state=ReplicaState(replica_id=cfg.broker_id, replica_epoch=-1),
            max_wait_ms=cfg.fetch_wait_max_ms,
            min_bytes=cfg.fetch_min_bytes,
            max_bytes=cfg.fetch_response_max_bytes,
            isolation_level=0,
            session_id=data.session_id,
            session_epoch=data.epoch,
            topics=[FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
            forgotten_topics_data=[
                ForgottenTopic(topic=t, partitions=ps) for t, ps in forgotten.items()
            ],
            rack_id="",
        )
        response = conn.request(request, version)
        if session is not None and not session.handle_response(
            response.error_code, response.session_id
        ):
            # a session error (unknown session, wrong epoch): the next fetch is full
            log.info(
                "fetch session with broker %d: %r; starting a new one",
                self.leader_id,
                ErrorCode.of(response.error_code),
            )
            return
        if response.error_code != ErrorCode.NONE:
            raise InterBrokerUnavailable(
                f"Fetch from broker {self.leader_id}: {ErrorCode.of(response.error_code)!r}"
            )
        for topic in response.responses:
            for p in topic.partitions:
                key = (topic.topic, p.partition_index)
                fetch_state = states.get(key)
                if fetch_state is None:
                    continue
                state = fetch_state
                with self._cond:
                    if not self._current(key, state):
                        continue
                state.lag = self._process(key, state, p)
        # a partition an incremental response left out has nothing new: its lag stands
        self.max_lag = max((s.lag for s in states.values()), default=0)

    def _process(self, key: TopicPartition, state: PartitionFetchState, p: Any) -> int:
        """One partition of a fetch response; returns its lag behind the leader's high
        watermark."""
        part = state.partition
        code = ErrorCode.of(p.error_code)
        if code != ErrorCode.NONE:
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                self._out_of_range(key, state, p.log_start_offset)
            else:
                self._partition_error(key, state, code)
            return 0
        diverging = p.diverging_epoch
        if diverging is not None and diverging.epoch >= 0:
            state.held_back(
                f"the leader answered a diverging epoch {diverging.epoch} ending at "
                f"{diverging.end_offset}"
            )
            self._apply_truncation(key, state, diverging.epoch, diverging.end_offset)
            return 0
        records = p.records
        if records is None:
            records = memoryview(b"")
        try:
            part.append_as_follower(
                memoryview(records) if not isinstance(records, memoryview) else records,
                leader_epoch=state.leader_epoch,
                leader_high_watermark=p.high_watermark,
                leader_log_start_offset=p.log_start_offset,
            )
        except KafkaApiError as e:
            log.error("%s-%d: the leader's batches are invalid: %s", key[0], key[1], e)
            state.held_back(f"invalid batches from the leader: {e}")
            self._delay(state)
            return 0
        except ValueError as e:
            # batches not at our log end: our log moved under us; truncate again
            log.warning("%s-%d: cannot append the leader's batches: %s", key[0], key[1], e)
            state.held_back(f"batches not at the log end: {e}")
            state.truncating = True
            return 0
        except (StorageError, OSError) as e:
            log.error("%s-%d: follower append failed: %s", key[0], key[1], e)
            state.held_back(f"the append failed: {e}")
            self._storage_error(part, e)
            self._delay(state)
            return 0
        lag = max(int(p.high_watermark) - part.log_end_offset, 0)
        state.caught_up = lag == 0
        return lag

    def _storage_error(self, part: Partition, error: Exception) -> None:
        """An I/O error on our log (not a refusal of the leader's batches): its dir goes
        offline."""
        if self._on_storage_error is None or part.offline:
            return
        if isinstance(error, KafkaStorageError | OSError):
            self._on_storage_error(part, error)

    def _out_of_range(
        self, key: TopicPartition, state: PartitionFetchState, leader_log_start: int
    ) -> None:
        """Our fetch offset is outside the leader's log (Kafka's ``handleOutOfRangeError``):
        below its log start (retention, DeleteRecords), start over at it; above its end (our
        log diverged), truncate again."""
        part = state.partition
        state.held_back(f"fetch offset out of range (leader's log start {leader_log_start})")
        if 0 <= part.log_end_offset < leader_log_start:
            log.info(
                "%s-%d: our log end %d is below the leader's log start %d: starting over",
                key[0], key[1], part.log_end_offset, leader_log_start,
            )  # fmt: skip
            part.truncate_fully_and_start_at(leader_log_start, leader_epoch=state.leader_epoch)
            self._delay(state)
        else:
            state.truncating = True

    def _partition_error(
        self, key: TopicPartition, state: PartitionFetchState, code: ErrorCode
    ) -> None:
        """An error the leader answered for one partition: wait and try again (a leadership
        change replaces the state meanwhile)."""
        state.held_back(f"the leader answered {code.name}")
        if code not in (
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.FENCED_LEADER_EPOCH,
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ):
            log.warning("%s-%d: the leader answered %r", key[0], key[1], code)
        self._delay(state)


class ReplicaFetcherManager:
    """The fetcher threads of this broker (see the module docstring)."""

    def __init__(
        self,
        config: FetcherConfig,
        view: Callable[[], ClusterView],
        *,
        on_storage_error: StorageErrorHandler | None = None,
    ) -> None:
        """``on_storage_error(partition, error)``: an I/O error writing a followed partition's
        log, called on the fetcher thread."""
        self.config = config
        self._view = view
        self._on_storage_error = on_storage_error
        self._threads: dict[tuple[int, int], ReplicaFetcherThread] = {}
        #: partition -> (leader, leader epoch, fetcher key) as last assigned
        self._assigned: dict[TopicPartition, tuple[int, int, tuple[int, int]]] = {}
        self._lock = threading.Lock()
        self._stopped = False

    def _fetcher_key(self, key: TopicPartition, leader: int) -> tuple[int, int]:
        n = max(self.config.num_fetchers, 1)
        topic, index = key
        return leader, (31 * _java_string_hash(topic) + index) % n

    def update(self, followed: Mapping[TopicPartition, tuple[Partition, int, int]]) -> None:
        """Makes the fetchers follow exactly ``followed``: partition -> (Partition, leader id,
        leader epoch). A partition whose leader or epoch changed starts again with truncation."""
        with self._lock:
            if self._stopped:
                return
            for key in list(self._assigned):
                leader, epoch, fkey = self._assigned[key]
                wanted = followed.get(key)
                if wanted is None or wanted[1] != leader or wanted[2] != epoch:
                    thread = self._threads.get(fkey)
                    if thread is not None:
                        thread.remove([key])
                    del self._assigned[key]
            adds: dict[tuple[int, int], dict[TopicPartition, PartitionFetchState]] = {}
            for key, (part, leader, epoch) in followed.items():
                if key in self._assigned:
                    continue
                fkey = self._fetcher_key(key, leader)
                adds.setdefault(fkey, {})[key] = PartitionFetchState(part, epoch)
                self._assigned[key] = (leader, epoch, fkey)
            for fkey, states in adds.items():
                thread = self._threads.get(fkey)
                if thread is None:
                    thread = ReplicaFetcherThread(
                        self.config, fkey[0], fkey[1], self._view, self._on_storage_error
                    )
                    self._threads[fkey] = thread
                    thread.start()
                thread.add(states)
            for fkey in [k for k, t in self._threads.items() if t.partition_count == 0]:
                self._threads.pop(fkey).shutdown()

    def followed(self) -> dict[TopicPartition, tuple[int, int]]:
        """partition -> (leader, leader epoch) for every followed partition."""
        with self._lock:
            return {k: (leader, epoch) for k, (leader, epoch, _) in self._assigned.items()}

    @property
    def max_lag(self) -> int:
        """Kafka's ReplicaFetcherManager MaxLag: the largest lag of any followed partition."""
        return max((t.max_lag for t in list(self._threads.values())), default=0)

    def shutdown(self) -> None:
        with self._lock:
            self._stopped = True
            threads = list(self._threads.values())
            self._threads.clear()
            self._assigned.clear()
        for thread in threads:
            thread.shutdown()
        for thread in threads:
            thread.join(5)


def _java_string_hash(text: str) -> int:
    """Java's String.hashCode, made non-negative (Kafka spreads partitions over fetchers by
    ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers``)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h & 0x7FFFFFFF
