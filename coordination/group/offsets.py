"""Committed offsets of one ``__consumer_offsets`` partition's groups (Kafka's
``OffsetMetadataManager``), whatever the groups' type (classic today; KIP-848 consumer groups
will share it).

Offsets change only once their records are committed: a commit writes its records and applies
them in the write's callback; a transactional producer's commit (TxnOffsetCommit, KIP-98) is a
transactional batch whose offsets stay pending, invisible to OffsetFetch (which answers
UNSTABLE_OFFSET_COMMIT for them when asked for stable offsets, KIP-447), until its transaction's
commit marker applies them (an abort marker drops them); a deletion writes tombstones and
forgets the offsets in the callback (and the pending transactional offsets of those
partitions). A failed write changes nothing and answers the error Kafka maps it to
(:func:`write_error`).

Each offset remembers the offset of the record that committed it (``record_offset``). When a
transaction commits, its pending offset of a partition applies only if its record is later in
the log than the record of the offset committed now (Kafka's ``OffsetMetadataManager.
replayEndTransactionMarker``): a regular OffsetCommit written after the TxnOffsetCommit wins
although the marker comes last, as it would after the log is compacted and replayed.

Not thread-safe on its own: its shard's lock is held around every use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace

from coordination.group.metadata import OffsetAndMetadata
from coordination.group.records import offset_commit_key, offset_commit_value
from coordination.runtime.runtime import Record, ShardContext
from protocol.error_codes import ErrorCode

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def write_error(code: ErrorCode, *, for_offsets: bool) -> ErrorCode:
    """Kafka's mapping of append errors to what group and offset clients understand."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return (
            ErrorCode.INVALID_COMMIT_OFFSET_SIZE if for_offsets else ErrorCode.UNKNOWN_SERVER_ERROR
        )
    if code == ErrorCode.REQUEST_TIMED_OUT and not for_offsets:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return code


def offset_value(oam: OffsetAndMetadata) -> bytes:
    return offset_commit_value(
        oam.offset,
        oam.leader_epoch,
        oam.metadata,
        oam.commit_timestamp_ms,
        expire_timestamp=oam.expire_timestamp_ms,
    )


CommitCallback = Callable[[dict[TopicPartition, ErrorCode]], None]


def _written_after(new: OffsetAndMetadata, existing: OffsetAndMetadata) -> bool:
    """Kafka's rule: the transactional offset applies if its record is later in the log. An
    offset whose record offset is unknown (-1) does not take part."""
    if new.record_offset < 0 or existing.record_offset < 0:
        return True
    return new.record_offset > existing.record_offset


class _Appended:
    """Where a write's records landed: the base offset, learned once appended."""

    __slots__ = ("base",)

    def __init__(self) -> None:
        self.base = -1

    def at(self, base_offset: int) -> None:
        self.base = base_offset

    def positioned(
        self, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """``offsets`` (in the order of the write's records) with their records' offsets."""
        if self.base < 0:
            return offsets
        return {
            tp: replace(oam, record_offset=self.base + i)
            for i, (tp, oam) in enumerate(offsets.items())
        }


class OffsetManager:
    def __init__(self, context: ShardContext, *, metadata_max_bytes: int) -> None:
        self.context = context
        self.metadata_max_bytes = metadata_max_bytes
        #: group id -> committed offsets
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        #: producer id -> group id -> offsets of its open transaction
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}

    def of(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (a live mapping: do not keep it across writes)."""
        return self.offsets.get(group_id, {})

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.offsets.get(group_id))

    # -- loading -------------------------------------------------------------------------------

    def replay_commit(self, group_id: str, tp: TopicPartition, oam: OffsetAndMetadata) -> None:
        self.offsets.setdefault(group_id, {})[tp] = oam

    def replay_tombstone(self, group_id: str, tp: TopicPartition) -> None:
        group = self.offsets.get(group_id)
        if group is not None:
            group.pop(tp, None)
            if not group:
                del self.offsets[group_id]
        self._drop_pending(group_id, (tp,))

    def _drop_pending(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """A tombstone also removes the partition's pending transactional offsets (Kafka's
        replay of an offset tombstone)."""
        tps = tuple(partitions)
        for groups in self.pending.values():
            pending = groups.get(group_id)
            if pending:
                for tp in tps:
                    pending.pop(tp, None)

    # -- transactional offsets (TxnOffsetCommit) -------------------------------------------------

    def replay_pending(
        self, producer_id: int, group_id: str, tp: TopicPartition, oam: OffsetAndMetadata | None
    ) -> None:
        group = self.pending.setdefault(producer_id, {}).setdefault(group_id, {})
        if oam is not None:
            group[tp] = oam

    def complete_transaction(self, producer_id: int, committed: bool) -> set[str]:
        """A marker of the producer's transaction: its pending offsets are applied (commit) or
        dropped (abort); a pending offset whose record is older than the record of the offset
        committed meanwhile is skipped (see the module docstring). Returns the groups whose
        offsets changed."""
        groups = self.pending.pop(producer_id, {})
        if not committed:
            return set()
        changed = set()
        for group_id, offsets in groups.items():
            current = self.offsets.setdefault(group_id, {})
            for tp, oam in offsets.items():
                existing = current.get(tp)
                if existing is None or _written_after(oam, existing):
                    current[tp] = oam
                    changed.add(group_id)
                else:
                    log.info(
                        "skipped the transactional offset commit of %s-%d (offset %d, record "
                        "%d) of producer %d in group %s: the committed offset's record %d is "
                        "later",
                        tp[0],
                        tp[1],
                        oam.offset,
                        oam.record_offset,
                        producer_id,
                        group_id,
                        existing.record_offset,
                    )
            if not current:
                del self.offsets[group_id]
        return changed

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in groups.get(group_id, ()) for groups in self.pending.values())

    def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """Writes ``offsets`` as the producer's transactional batch; they stay pending until
        its transaction ends."""
        results: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, oam in offsets.items():
            if len(oam.metadata.encode()) > self.metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = oam
        if not valid:
            callback(results)
            return
        records: list[Record] = [
            (offset_commit_key(group_id, tp[0], tp[1]), offset_value(oam))
            for tp, oam in valid.items()
        ]
        appended = _Appended()

        def done(error: ErrorCode | None) -> None:
            if error is None:
                self.pending.setdefault(producer_id, {}).setdefault(group_id, {}).update(
                    appended.positioned(valid)
                )
                code = ErrorCode.NONE
            elif error == ErrorCode.INVALID_PRODUCER_EPOCH:
                code = ErrorCode.PRODUCER_FENCED
            else:
                code = write_error(error, for_offsets=True)
                log.warning("transactional offset commit of group %s failed: %s", group_id, error)
            for tp in valid:
                results[tp] = code
            callback(results)

        self.context.write(
            records,
            done,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            on_appended=appended.at,
        )

    # -- OffsetCommit --------------------------------------------------------------------------

    def commit(
        self,
        group_id: str,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback,
    ) -> None:
        """Writes ``offsets`` (metadata too large: OFFSET_METADATA_TOO_LARGE for that
        partition) and answers one error per partition once they are committed."""
        results: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, oam in offsets.items():
            if len(oam.metadata.encode()) > self.metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = oam
        if not valid:
            callback(results)
            return
        records: list[Record] = [
            (offset_commit_key(group_id, tp[0], tp[1]), offset_value(oam))
            for tp, oam in valid.items()
        ]

        appended = _Appended()

        def done(error: ErrorCode | None) -> None:
            if error is None:
                self.offsets.setdefault(group_id, {}).update(appended.positioned(valid))
                code = ErrorCode.NONE
            else:
                code = write_error(error, for_offsets=True)
                log.warning("offset commit of group %s failed: %s", group_id, error.name)
            for tp in valid:
                results[tp] = code
            callback(results)

        self.context.write(records, done, on_appended=appended.at)

    # -- OffsetFetch ---------------------------------------------------------------------------

    def fetch(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (None: every committed one); None for a
        partition without a commit."""
        committed = self.offsets.get(group_id, {})
        if partitions is None:
            return dict(committed)
        return {tp: committed.get(tp) for tp in partitions}

    # -- deletion and expiration ---------------------------------------------------------------

    def tombstones(
        self, group_id: str, partitions: Iterable[TopicPartition], *, pending: bool = False
    ) -> list[Record]:
        """Tombstone records for the committed ones among ``partitions`` (and, with
        ``pending``, those with only a pending transactional offset)."""
        committed = self.offsets.get(group_id, {})
        return [
            (offset_commit_key(group_id, t, p), None)
            for t, p in partitions
            if (t, p) in committed or (pending and self.has_pending(group_id, (t, p)))
        ]

    def holding(self, partitions: Collection[TopicPartition]) -> dict[str, list[TopicPartition]]:
        """The groups with a committed or pending transactional offset of any of
        ``partitions``, and those of the partitions each holds."""
        wanted = frozenset(partitions)
        held: dict[str, set[TopicPartition]] = {}
        for group_id, committed in self.offsets.items():
            hit = [tp for tp in committed if tp in wanted]
            if hit:
                held.setdefault(group_id, set()).update(hit)
        for groups in self.pending.values():
            for group_id, pending in groups.items():
                hit = [tp for tp in pending if tp in wanted]
                if hit:
                    held.setdefault(group_id, set()).update(hit)
        return {g: sorted(tps) for g, tps in held.items()}

    def forget(self, group_id: str, partitions: Iterable[TopicPartition]) -> int:
        """Drops offsets whose tombstones were committed, and the pending transactional offsets
        of those partitions, as replaying the tombstones does; returns how many committed
        offsets it dropped."""
        tps = tuple(partitions)
        self._drop_pending(group_id, tps)
        committed = self.offsets.get(group_id)
        if committed is None:
            return 0
        n = 0
        for tp in tps:
            if committed.pop(tp, None) is not None:
                n += 1
        if not committed:
            del self.offsets[group_id]
        return n

    def expired(
        self,
        group_id: str,
        now_ms: int,
        retention_ms: int,
        base: Callable[[OffsetAndMetadata], int],
        subscribed: frozenset[str],
    ) -> list[TopicPartition]:
        """Kafka's offset expiration: offsets of topics the group is not subscribed to whose
        explicit expire timestamp passed, or whose ``base`` (commit time, or when the group
        became empty) is older than ``retention_ms``."""
        out = []
        for tp, oam in self.offsets.get(group_id, {}).items():
            if tp[0] in subscribed:
                continue
            if oam.expire_timestamp_ms >= 0:
                if now_ms >= oam.expire_timestamp_ms:
                    out.append(tp)
            elif now_ms - base(oam) >= retention_ms:
                out.append(tp)
        return out
