"""The transaction coordinator as a state machine (Kafka's TransactionCoordinator and
TransactionMetadata): a fake clock and scheduler, an in-memory ``__transaction_state`` that can
hold or fail writes, and a marker sender the test completes. States and transitions, fencing,
timeouts, expiration, KIP-360 epoch recovery, epoch exhaustion, loading and unloading."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from coordination.txn.coordinator import TransactionCoordinator
from coordination.txn.metadata import (
    MAX_PRODUCER_EPOCH,
    SHORT_MAX,
    TransactionMetadata,
    TxnConfig,
    TxnState,
)
from coordination.txn.records import TxnLogValue, parse_txn_key, parse_txn_value, txn_key, txn_value
from coordination.txn.shard import TxnResult
from protocol.error_codes import ErrorCode
from tests.unit.coordination.test_group_coordinator import FakeScheduler

E = ErrorCode
S = TxnState
TID = "app-1"
A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)
COORDINATOR_EPOCH = 3

CONFIG = TxnConfig(
    num_partitions=1,
    max_timeout_ms=60_000,
    transactional_id_expiration_ms=30_000,
    abort_timed_out_interval_ms=1_000,
    remove_expired_interval_ms=5_000,
)

Record = tuple[bytes, bytes | None]


class StateLog:
    """``__transaction_state`` in memory: appends commit at once, or wait for the test
    (``hold``), or fail (``fail_with``)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.hold = False
        self.fail_with: ErrorCode | None = None
        self.waiting: list[Callable[[ErrorCode | None], None]] = []

    def append(
        self,
        partition: int,
        records: Sequence[Record],
        callback: Callable[[ErrorCode | None], None],
        **_: object,
    ) -> None:
        if self.fail_with is not None:
            callback(self.fail_with)
            return
        self.records.extend(records)
        if self.hold:
            self.waiting.append(callback)
        else:
            callback(None)

    def commit_all(self) -> None:
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            callback(None)

    def values(self, transactional_id: str = TID) -> list[TxnLogValue | None]:
        return [
            None if v is None else parse_txn_value(v)
            for k, v in self.records
            if parse_txn_key(k) == transactional_id
        ]

    def states(self, transactional_id: str = TID) -> list[TxnState | None]:
        return [None if v is None else TxnState(v.state) for v in self.values(transactional_id)]


class Markers:
    """The MarkerSender: records each job; completes it at once unless ``hold``."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []
        self.hold = False

    def send_markers(self, **job: Any) -> None:
        self.jobs.append(job)
        if not self.hold:
            job["done"]()

    def finish_all(self) -> None:
        jobs = [j for j in self.jobs if not j.get("finished")]
        for job in jobs:
            job["finished"] = True
            job["done"]()


class Harness:
    def __init__(self, *, records: list[Record] | None = None, load: bool = True) -> None:
        self.sched = FakeScheduler()
        self.log = StateLog()
        self.markers = Markers()
        #: marker jobs sent after an EndTxn answered, by the request's thread
        self.markers_after_answer = 0
        self._pids = itertools.count(1000)
        self.coordinator = TransactionCoordinator(
            CONFIG,
            self.sched,
            self.log,
            producer_ids=lambda: next(self._pids),
            markers=self.markers,
            coordinator_epoch=lambda partition: COORDINATOR_EPOCH,
            clock=self.sched.clock,
        )
        self.coordinator.startup()
        if records is not None:
            self.log.records = list(records)
        if load:
            self.load()

    def load(self) -> None:
        c = self.coordinator
        assert c.complete_loading(0, c.begin_loading(0), list(self.log.records))

    def init(
        self, txn_id: str = TID, timeout_ms: int = 10_000, expected: tuple[int, int] = (-1, -1)
    ) -> TxnResult:
        out: list[TxnResult] = []
        self.coordinator.init_producer_id(
            txn_id,
            timeout_ms,
            out.append,
            expected_producer_id=expected[0],
            expected_producer_epoch=expected[1],
        )
        assert len(out) <= 1
        return out[0] if out else TxnResult(E.REQUEST_TIMED_OUT)

    def add(
        self, pid: int, epoch: int, *tps: tuple[str, int], txn_id: str = TID, tv: int = 0
    ) -> ErrorCode:
        """AddPartitionsToTxn; ``tv`` 2: a partition leader adds them (transaction version 2)."""
        out: list[ErrorCode] = []
        self.coordinator.add_partitions(
            txn_id, pid, epoch, list(tps), out.append, client_transaction_version=tv
        )
        assert len(out) <= 1
        return out[0] if out else E.REQUEST_TIMED_OUT

    def end(self, pid: int, epoch: int, commit: bool, txn_id: str = TID, tv: int = 0) -> TxnResult:
        """EndTxn; ``tv`` 2: EndTxn v5 (transaction version 2)."""
        out: list[TxnResult] = []
        self.coordinator.end_txn(
            txn_id, pid, epoch, commit, out.append, client_transaction_version=tv
        )
        assert len(out) <= 1
        # the request's thread sends the markers once the answer is on its way
        sent = len(self.markers.jobs)
        self.sched.run_soon()
        self.markers_after_answer += len(self.markers.jobs) - sent
        return out[0] if out else TxnResult(E.REQUEST_TIMED_OUT)

    def finish_markers(self) -> None:
        """Every marker job completes (later, from another thread: the coordinator completes
        the transaction on its scheduler)."""
        self.markers.finish_all()
        self.sched.advance(0)

    def state(self, txn_id: str = TID) -> TransactionMetadata:
        error, txn = self.coordinator.describe(txn_id)
        assert error == E.NONE and txn is not None, error
        return txn

    def started(self, txn_id: str = TID, *tps: tuple[str, int]) -> tuple[int, int]:
        """A producer with an ongoing transaction over ``tps`` (default: a-0)."""
        r = self.init(txn_id)
        assert r.error == E.NONE
        assert self.add(r.producer_id, r.producer_epoch, *(tps or (A0,)), txn_id=txn_id) == E.NONE
        return r.producer_id, r.producer_epoch


@pytest.fixture
def h() -> Harness:
    return Harness()


# -- InitProducerId -------------------------------------------------------------------------------


def test_init_gives_a_producer_id_then_bumps_its_epoch(h: Harness) -> None:
    assert h.init() == TxnResult(E.NONE, 1000, 0)
    txn = h.state()
    assert (txn.state, txn.timeout_ms, txn.last_producer_epoch) == (S.EMPTY, 10_000, -1)
    assert h.init(timeout_ms=20_000) == TxnResult(E.NONE, 1000, 1)  # same id, next epoch
    txn = h.state()
    # a new instance (no expected pair): the last epoch is forgotten, the new timeout kept
    assert (txn.producer_epoch, txn.last_producer_epoch, txn.timeout_ms) == (1, -1, 20_000)
    assert h.log.states() == [S.EMPTY, S.EMPTY]
    assert h.init("other") == TxnResult(E.NONE, 1001, 0)


def test_init_refuses_bad_requests(h: Harness) -> None:
    assert h.init("").error == E.INVALID_REQUEST
    assert h.init(timeout_ms=0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout_ms=CONFIG.max_timeout_ms + 1).error == E.INVALID_TRANSACTION_TIMEOUT
    assert h.log.records == []


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(h: Harness) -> None:
    h.markers.hold = True
    pid, epoch = h.started(TID, A0, B0)
    assert h.init().error == E.CONCURRENT_TRANSACTIONS  # the abort comes first
    txn = h.state()
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (S.PREPARE_ABORT, 1, -1)
    (job,) = h.markers.jobs
    assert (job["producer_id"], job["producer_epoch"], job["committed"]) == (pid, 1, False)
    assert job["partitions"] == frozenset({A0, B0})
    assert job["coordinator_epoch"] == COORDINATOR_EPOCH
    # the old instance is fenced; the new one waits for the abort
    assert h.add(pid, epoch, A1) == E.PRODUCER_FENCED
    assert h.end(pid, epoch, True).error == E.PRODUCER_FENCED
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    h.finish_markers()
    assert h.state().state == S.COMPLETE_ABORT and h.state().partitions == frozenset()
    assert h.init() == TxnResult(E.NONE, pid, 2)
    # the old instance cannot take its id back with KIP-360 either
    assert h.init(expected=(pid, epoch)).error == E.PRODUCER_FENCED
    assert h.log.states() == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.COMPLETE_ABORT, S.EMPTY]


def test_kip360_the_producer_bumps_its_own_epoch(h: Harness) -> None:
    pid, _ = h.init()[1:]
    assert h.init(expected=(pid, 0)) == TxnResult(E.NONE, pid, 1)
    assert h.state().last_producer_epoch == 0
    # a retry of that call (its answer was lost): the current pair, no second bump
    assert h.init(expected=(pid, 0)) == TxnResult(E.NONE, pid, 1)
    assert h.init(expected=(pid, 5)).error == E.PRODUCER_FENCED
    assert h.init(expected=(pid + 1, 1)).error == E.PRODUCER_FENCED
    # after an abort the producer bumps again from its current epoch
    assert h.add(pid, 1, A0) == E.NONE
    assert h.end(pid, 1, False).error == E.NONE
    assert h.init(expected=(pid, 1)) == TxnResult(E.NONE, pid, 2)
    # a new instance resets the last epoch: the older pair is fenced from then on
    assert h.init() == TxnResult(E.NONE, pid, 3)
    assert h.init(expected=(pid, 2)).error == E.PRODUCER_FENCED


def test_kip360_while_ongoing_fences_like_a_new_instance(h: Harness) -> None:
    pid, epoch = h.started()
    assert h.init(expected=(pid, epoch)).error == E.CONCURRENT_TRANSACTIONS
    assert h.state().state == S.COMPLETE_ABORT and h.state().producer_epoch == epoch + 1
    # the epoch it named was fenced by the abort
    assert h.init(expected=(pid, epoch)).error == E.PRODUCER_FENCED


def test_epoch_exhaustion_moves_the_id_to_a_new_producer_id() -> None:
    exhausted = TransactionMetadata(
        TID, 77, producer_epoch=MAX_PRODUCER_EPOCH - 1, state=S.COMPLETE_COMMIT, timeout_ms=5000
    )
    h = Harness(records=[(txn_key(TID), txn_value(exhausted.log_value()))])
    # MAX - 1 is still bumped; MAX is the last epoch a client gets
    assert h.init() == TxnResult(E.NONE, 77, MAX_PRODUCER_EPOCH)
    assert h.init() == TxnResult(E.NONE, 1000, 0)
    txn = h.state()
    assert (txn.previous_producer_id, txn.last_producer_epoch) == (77, -1)
    assert h.log.values()[-1].previous_producer_id == 77  # type: ignore[union-attr]


def test_kip360_across_an_exhausted_epoch() -> None:
    exhausted = TransactionMetadata(
        TID, 77, producer_epoch=MAX_PRODUCER_EPOCH, state=S.COMPLETE_ABORT, timeout_ms=5000
    )
    h = Harness(records=[(txn_key(TID), txn_value(exhausted.log_value()))])
    assert h.init(expected=(77, MAX_PRODUCER_EPOCH)) == TxnResult(E.NONE, 1000, 0)
    assert h.state().last_producer_epoch == MAX_PRODUCER_EPOCH
    # the retry names the old id: valid (its epoch is exhausted), answered the new pair
    assert h.init(expected=(77, MAX_PRODUCER_EPOCH)) == TxnResult(E.NONE, 1000, 0)
    assert h.init(expected=(77, 5)).error == E.PRODUCER_FENCED


def test_a_fence_may_use_the_last_epoch() -> None:
    ongoing = TransactionMetadata(
        TID,
        77,
        producer_epoch=MAX_PRODUCER_EPOCH,
        state=S.ONGOING,
        partitions=frozenset({A0}),
        start_ms=1,
        timeout_ms=60_000,
    )
    h = Harness(records=[(txn_key(TID), txn_value(ongoing.log_value()))])
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    assert h.markers.jobs[0]["producer_epoch"] == SHORT_MAX
    assert h.state().state == S.COMPLETE_ABORT
    assert h.init() == TxnResult(E.NONE, 1000, 0)


# -- transaction version 2 (KIP-890 part 2) ------------------------------------------------------


def test_v2_every_end_bumps_the_epoch_and_retries_name_the_epoch_before(h: Harness) -> None:
    h.markers.hold = True
    pid, epoch = h.init()[1:]
    assert h.add(pid, epoch, A0, tv=2) == E.NONE
    assert h.state().client_transaction_version == 2
    assert h.end(pid, epoch - 1, True, tv=2).error == E.PRODUCER_FENCED
    assert h.end(pid, epoch, True, tv=2) == TxnResult(E.NONE, pid, epoch + 1)
    txn = h.state()
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (
        S.PREPARE_COMMIT,
        epoch + 1,
        epoch,
    )
    # the markers carry the bumped epoch, which fences a late batch of the ended transaction
    assert h.markers.jobs[0]["producer_epoch"] == epoch + 1
    assert h.end(pid, epoch, True, tv=2).error == E.CONCURRENT_TRANSACTIONS  # a retry
    # the next transaction cannot start until this one is complete
    assert h.add(pid, epoch + 1, A1, tv=2) == E.CONCURRENT_TRANSACTIONS
    h.finish_markers()
    assert h.state().state == S.COMPLETE_COMMIT
    assert h.end(pid, epoch, True, tv=2) == TxnResult(E.NONE, pid, epoch + 1)  # a retry
    assert h.end(pid, epoch, False, tv=2).error == E.INVALID_TXN_STATE  # a contrary retry
    # the new epoch commits nothing: nothing is open
    assert h.end(pid, epoch + 1, True, tv=2).error == E.INVALID_TXN_STATE
    assert h.end(pid, epoch + 2, True, tv=2).error == E.PRODUCER_FENCED
    assert h.add(pid, epoch + 1, A1, tv=2) == E.NONE
    assert h.end(pid, epoch + 1, False, tv=2) == TxnResult(E.NONE, pid, epoch + 2)
    h.finish_markers()
    assert h.log.states() == [
        S.EMPTY,
        S.ONGOING,
        S.PREPARE_COMMIT,
        S.COMPLETE_COMMIT,
        S.ONGOING,
        S.PREPARE_ABORT,
        S.COMPLETE_ABORT,
    ]


def test_v2_aborts_with_no_partition_added_bump_the_epoch(h: Harness) -> None:
    """A producer of transaction version 2 does not know whether its records reached a
    partition, so it ends every transaction; an abort with none open bumps the epoch through
    PrepareAbort and CompleteAbort with no marker (a commit is refused)."""
    pid, epoch = h.init()[1:]
    assert h.end(pid, epoch, True, tv=2).error == E.INVALID_TXN_STATE
    assert h.end(pid, epoch, False, tv=2) == TxnResult(E.NONE, pid, epoch + 1)
    txn = h.state()
    assert (txn.state, txn.partitions, txn.producer_epoch) == (S.COMPLETE_ABORT, frozenset(), 1)
    assert txn.start_ms == h.sched.now
    assert h.markers.jobs[0]["partitions"] == frozenset()
    # a retry answers the same; the new epoch's abort bumps again
    assert h.end(pid, epoch, False, tv=2) == TxnResult(E.NONE, pid, epoch + 1)
    assert h.end(pid, epoch + 1, False, tv=2) == TxnResult(E.NONE, pid, epoch + 2)
    assert h.log.states()[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    # after version 2 only the epoch tells a retry: EndTxn v4 with the current one is none
    assert h.end(pid, epoch + 2, False).error == E.INVALID_TXN_STATE


def test_v2_an_exhausted_epoch_moves_to_the_next_producer_id_once_complete() -> None:
    ongoing = TransactionMetadata(
        TID,
        77,
        producer_epoch=MAX_PRODUCER_EPOCH,
        state=S.ONGOING,
        partitions=frozenset({A0}),
        start_ms=1,
        timeout_ms=60_000,
        client_transaction_version=2,
    )
    h = Harness(records=[(txn_key(TID), txn_value(ongoing.log_value()))])
    h.markers.hold = True
    # the answer names what the producer uses once the transaction is complete
    assert h.end(77, MAX_PRODUCER_EPOCH, True, tv=2) == TxnResult(E.NONE, 1000, 0)
    txn = h.state()
    assert (txn.producer_id, txn.producer_epoch, txn.next_producer_id) == (77, SHORT_MAX, 1000)
    assert h.markers.jobs[0]["producer_epoch"] == SHORT_MAX
    h.finish_markers()
    txn = h.state()
    assert (txn.state, txn.producer_id, txn.producer_epoch) == (S.COMPLETE_COMMIT, 1000, 0)
    assert (txn.previous_producer_id, txn.next_producer_id) == (77, -1)
    # a retry with the old pair is answered the new one
    assert h.end(77, MAX_PRODUCER_EPOCH, True, tv=2) == TxnResult(E.NONE, 1000, 0)
    assert h.add(1000, 0, A0, tv=2) == E.NONE
    # the log replays to the same state
    replayed = Harness(records=list(h.log.records))
    assert replayed.state().producer_id == 1000 and replayed.state().previous_producer_id == 77


def test_v2_a_fence_bumps_once(h: Harness) -> None:
    pid, epoch = h.init()[1:]
    assert h.add(pid, epoch, A0, tv=2) == E.NONE
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    assert h.markers.jobs[0]["producer_epoch"] == epoch + 1
    assert h.init() == TxnResult(E.NONE, pid, epoch + 2)
    assert h.end(pid, epoch, True, tv=2).error == E.PRODUCER_FENCED


# -- AddPartitionsToTxn, EndTxn -------------------------------------------------------------------


def test_a_committed_transaction_goes_through_its_states(h: Harness) -> None:
    h.markers.hold = True
    pid, epoch = h.init()[1:]
    before = h.sched.now
    assert h.add(pid, epoch, A0) == E.NONE
    txn = h.state()
    assert (txn.state, txn.partitions, txn.start_ms) == (S.ONGOING, frozenset({A0}), before)
    written = len(h.log.records)
    h.sched.advance(50)
    assert h.add(pid, epoch, A0) == E.NONE  # already there: answered without a write
    assert len(h.log.records) == written
    assert h.add(pid, epoch, A1, B0) == E.NONE
    assert h.state().partitions == frozenset({A0, A1, B0})
    assert h.state().start_ms == before  # the transaction's start stays
    assert h.end(pid, epoch, True) == TxnResult(E.NONE, pid, epoch)
    assert h.state().state == S.PREPARE_COMMIT
    # answered once PrepareCommit is written; the markers follow the answer
    assert h.markers_after_answer == 1
    (job,) = h.markers.jobs
    assert job["committed"] and job["partitions"] == frozenset({A0, A1, B0})
    # until the markers are written
    assert h.end(pid, epoch, True).error == E.CONCURRENT_TRANSACTIONS
    assert h.end(pid, epoch, False).error == E.INVALID_TXN_STATE
    assert h.add(pid, epoch, A0) == E.CONCURRENT_TRANSACTIONS
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    h.finish_markers()
    txn = h.state()
    assert (txn.state, txn.partitions) == (S.COMPLETE_COMMIT, frozenset())
    # a retried EndTxn of the completed transaction
    assert h.end(pid, epoch, True) == TxnResult(E.NONE, pid, epoch)
    assert h.end(pid, epoch, False).error == E.INVALID_TXN_STATE
    # the next transaction starts from CompleteCommit
    assert h.add(pid, epoch, B0) == E.NONE
    assert h.log.states() == [
        S.EMPTY,
        S.ONGOING,
        S.ONGOING,
        S.PREPARE_COMMIT,
        S.COMPLETE_COMMIT,
        S.ONGOING,
    ]
    # partitions are written while the transaction is open, not once it completed
    assert [v.partitions for v in h.log.values()][-3:] == [  # type: ignore[union-attr]
        frozenset({A0, A1, B0}),
        frozenset(),
        frozenset({B0}),
    ]


def test_an_aborted_transaction(h: Harness) -> None:
    pid, epoch = h.started()
    assert h.end(pid, epoch, False) == TxnResult(E.NONE, pid, epoch)
    assert h.state().state == S.COMPLETE_ABORT
    assert h.markers.jobs[0]["committed"] is False
    assert h.end(pid, epoch, False).error == E.NONE
    assert h.end(pid, epoch, True).error == E.INVALID_TXN_STATE


def test_producer_checks(h: Harness) -> None:
    pid, epoch = h.init()[1:]
    assert h.end(pid, epoch, True).error == E.INVALID_TXN_STATE  # nothing to end
    assert h.add(pid + 1, epoch, A0) == E.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid, epoch + 1, A0) == E.PRODUCER_FENCED
    assert h.add(pid, epoch, A0, txn_id="unknown") == E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(pid, epoch, True, txn_id="unknown").error == E.INVALID_PRODUCER_ID_MAPPING
    assert h.add(pid, epoch, A0) == E.NONE
    assert h.end(pid + 1, epoch, True).error == E.INVALID_PRODUCER_ID_MAPPING
    assert h.end(pid, epoch - 1, True).error == E.PRODUCER_FENCED


def test_requests_wait_for_the_write_in_flight(h: Harness) -> None:
    pid, epoch = h.init()[1:]
    h.log.hold = True
    out: list[ErrorCode] = []
    h.coordinator.add_partitions(TID, pid, epoch, [A0], out.append)
    assert out == []  # not answered before the write is committed
    assert h.add(pid, epoch, A1) == E.CONCURRENT_TRANSACTIONS
    assert h.end(pid, epoch, True).error == E.CONCURRENT_TRANSACTIONS
    assert h.init().error == E.CONCURRENT_TRANSACTIONS
    assert h.state().state == S.EMPTY  # nothing applied yet
    h.log.commit_all()
    assert out == [E.NONE]
    assert h.state().state == S.ONGOING


def test_failed_writes_change_nothing_and_answer_what_clients_expect(h: Harness) -> None:
    h.log.fail_with = E.NOT_LEADER_OR_FOLLOWER
    assert h.init().error == E.NOT_COORDINATOR
    assert h.coordinator.describe(TID)[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    h.log.fail_with = None
    pid, epoch = h.init()[1:]
    h.log.fail_with = E.NOT_ENOUGH_REPLICAS
    assert h.add(pid, epoch, A0) == E.COORDINATOR_NOT_AVAILABLE
    assert h.state().state == S.EMPTY and h.state().pending is None
    h.log.fail_with = None
    assert h.add(pid, epoch, A0) == E.NONE


def test_verify_partitions_as_kip890_partition_leaders_ask(h: Harness) -> None:
    h.markers.hold = True
    pid, epoch = h.started(TID, A0)
    verify = h.coordinator.verify_partitions
    assert verify(TID, pid, epoch, [A0, B0]) == {A0: E.NONE, B0: E.TRANSACTION_ABORTABLE}
    assert verify(TID, pid, epoch + 1, [A0]) == {A0: E.PRODUCER_FENCED}
    assert verify(TID, pid + 1, epoch, [A0]) == {A0: E.INVALID_PRODUCER_ID_MAPPING}
    assert verify("unknown", pid, epoch, [A0]) == {A0: E.INVALID_PRODUCER_ID_MAPPING}
    assert h.end(pid, epoch, True).error == E.NONE
    assert verify(TID, pid, epoch, [A0]) == {A0: E.CONCURRENT_TRANSACTIONS}
    h.finish_markers()
    assert verify(TID, pid, epoch, [A0]) == {A0: E.TRANSACTION_ABORTABLE}


# -- timers ---------------------------------------------------------------------------------------


def test_a_transaction_open_past_its_timeout_is_aborted_with_a_fencing_epoch(h: Harness) -> None:
    r = h.init(timeout_ms=2_000)
    pid, epoch = r.producer_id, r.producer_epoch
    assert h.add(pid, epoch, A0) == E.NONE
    h.sched.advance(1_000)
    assert h.state().state == S.ONGOING
    h.sched.advance(2_000)  # past the timeout, at the next check
    txn = h.state()
    assert (txn.state, txn.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    (job,) = h.markers.jobs
    assert (job["committed"], job["producer_epoch"]) == (False, epoch + 1)
    assert h.end(pid, epoch, True).error == E.PRODUCER_FENCED
    assert h.add(pid, epoch, A0) == E.PRODUCER_FENCED
    assert h.init() == TxnResult(E.NONE, pid, epoch + 2)


def test_idle_transactional_ids_expire(h: Harness) -> None:
    assert h.init("idle").error == E.NONE
    h.started("busy")  # an open transaction never expires (its timeout aborts it first)
    busy = h.init("busy-long", timeout_ms=CONFIG.max_timeout_ms)
    assert h.add(busy.producer_id, busy.producer_epoch, A0, txn_id="busy-long") == E.NONE
    h.sched.advance(CONFIG.transactional_id_expiration_ms + CONFIG.remove_expired_interval_ms)
    assert h.coordinator.describe("idle")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    assert h.log.states("idle")[-1] is None  # a tombstone
    assert h.state("busy-long").state == S.ONGOING
    # a new session of the expired id gets a new producer id
    assert h.init("idle").producer_id not in (1000, 1001, 1002)


# -- loading --------------------------------------------------------------------------------------


def test_loading_and_unloading() -> None:
    h = Harness(load=False)
    c = h.coordinator
    assert h.init().error == E.NOT_COORDINATOR
    load_id = c.begin_loading(0)
    assert h.init().error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.verify_partitions(TID, 1, 0, [A0]) == {A0: E.COORDINATOR_LOAD_IN_PROGRESS}
    assert c.complete_loading(0, load_id, [])
    pid, epoch = h.init()[1:]
    h.log.hold = True
    out: list[ErrorCode] = []
    c.add_partitions(TID, pid, epoch, [A0], out.append)
    c.unload(0)
    assert out == []
    h.log.commit_all()  # the write in flight ends: answered, touching nothing
    assert out == [E.NOT_COORDINATOR]
    assert h.init().error == E.NOT_COORDINATOR


def test_a_new_coordinator_completes_prepared_transactions(h: Harness) -> None:
    h.markers.hold = True
    pid, epoch = h.started(TID, A0, B0)
    assert h.end(pid, epoch, True).error == E.NONE
    # the coordinator dies before the markers are written: a new one loads the log
    again = Harness(records=h.log.records)
    (job,) = again.markers.jobs
    assert job["committed"] and job["partitions"] == frozenset({A0, B0})
    assert (job["producer_id"], job["producer_epoch"]) == (pid, epoch)
    assert again.state().state == S.COMPLETE_COMMIT
    # an open transaction is still open, and still times out
    h2 = Harness()
    h2.started("open")
    again = Harness(records=h2.log.records)
    assert again.state("open").state == S.ONGOING
    again.sched.advance(20_000)
    assert again.state("open").state == S.COMPLETE_ABORT


def test_the_log_replays_to_the_same_state(h: Harness) -> None:
    h.markers.hold = True
    h.started("a", A0)
    pid, epoch = h.started("b", A0, B0)
    assert h.end(pid, epoch, True, txn_id="b").error == E.NONE
    h.finish_markers()
    h.init("c", timeout_ms=7_000)
    h.started("d", B0)
    assert h.init("d").error == E.CONCURRENT_TRANSACTIONS
    h.finish_markers()
    h.init("e")
    # "a" times out (aborted), "c" and "e" expire
    h.sched.advance(CONFIG.transactional_id_expiration_ms + CONFIG.remove_expired_interval_ms)
    h.finish_markers()
    assert h.coordinator.describe("c")[0] == E.TRANSACTIONAL_ID_NOT_FOUND
    again = Harness(records=h.log.records)
    fields = ("producer_id", "producer_epoch", "state", "partitions", "timeout_ms", "start_ms")

    def snapshot(harness: Harness) -> dict[str, tuple[object, ...]]:
        _, txns = harness.coordinator.list_transactions()
        return {t.transactional_id: tuple(getattr(t, f) for f in fields) for t in txns}

    assert snapshot(again) == snapshot(h)


# -- admin ----------------------------------------------------------------------------------------


def test_list_and_describe(h: Harness) -> None:
    h.started("open-1", A0)
    h.sched.advance(5_000)
    h.started("open-2", B0)
    done = h.init("done")
    assert h.add(done.producer_id, done.producer_epoch, A1, txn_id="done") == E.NONE
    assert h.end(done.producer_id, done.producer_epoch, True, txn_id="done").error == E.NONE

    def ids(**filters: Any) -> list[str]:
        error, txns = h.coordinator.list_transactions(**filters)
        assert error == E.NONE
        return sorted(t.transactional_id for t in txns)

    assert ids() == ["done", "open-1", "open-2"]
    assert ids(states=["Ongoing"]) == ["open-1", "open-2"]
    assert ids(states=["completecommit"]) == ["done"]
    assert ids(producer_ids=[done.producer_id]) == ["done"]
    assert ids(duration_filter_ms=4_000) == ["open-1"]
    # KIP-1152: RE2 syntax, the whole id
    assert ids(transactional_id_pattern="open-.*") == ["open-1", "open-2"]
    assert ids(transactional_id_pattern="open") == []
    assert ids(transactional_id_pattern="") == ["done", "open-1", "open-2"]
    assert ids(transactional_id_pattern="(?i)DONE", states=["CompleteCommit"]) == ["done"]
    assert h.coordinator.list_transactions(transactional_id_pattern="[") == (
        E.INVALID_REGULAR_EXPRESSION,
        [],
    )
    assert h.coordinator.describe("nope") == (E.TRANSACTIONAL_ID_NOT_FOUND, None)
