"""The fetch session cache (KIP-227) against Kafka's FetchSessionCache rules: epochs, changed and
forgotten partitions, what an incremental response carries, and eviction (stale first, then by
privilege and size, with the minimum eviction time)."""

from __future__ import annotations

import random
import uuid

import pytest

from broker.replication.fetch_session import (
    INT32_MAX,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSessionCache,
    SessionError,
    next_epoch,
)
from broker.replication.partition import DivergingEpoch, LogReadResult
from broker.replication.replica_manager import FetchRead
from protocol.error_codes import ErrorCode


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


class Region:
    def __init__(self, length: int) -> None:
        self.length = length


def reads(n: int, topic: str = "t", hw: int = 10) -> list[FetchRead]:
    out = []
    for i in range(n):
        r = FetchRead(topic, uuid.UUID(int=0), i, 0, 1000, -1, None)
        r.result = LogReadResult(ErrorCode.NONE, hw, hw, 0)
        out.append(r)
    return out


def cache(slots: int = 10, eviction_ms: int = 120_000) -> tuple[FetchSessionCache, Clock]:
    clock = Clock()
    return (
        FetchSessionCache(
            max_entries=slots, eviction_ms=eviction_ms, clock_ms=clock, rng=random.Random(1)
        ),
        clock,
    )


def changed(index: int, offset: int, topic: str = "t") -> CachedPartition:
    return CachedPartition(topic, uuid.UUID(int=0), index, offset, 1000, -1)


def test_next_epoch_wraps_to_one() -> None:
    assert [next_epoch(0), next_epoch(1), next_epoch(INT32_MAX), next_epoch(-1)] == [1, 2, 1, -1]


def test_incremental_updates_adds_and_forgets() -> None:
    c, _ = cache()
    sid = c.create(reads(3), privileged=False, uses_topic_ids=False)
    assert sid > 0 and c.size == 1 and c.total_partitions == 3
    session = c.incremental(
        sid, 1, uses_topic_ids=False, changed=[changed(1, 5), changed(7, 0)], forgotten=[("t", 0)]
    )
    assert session is not None and session.epoch == 2
    assert [(cp.index, cp.fetch_offset) for cp in session.partitions.values()] == [
        (1, 5),
        (2, 0),
        (7, 0),
    ]
    assert c.total_partitions == 3
    with pytest.raises(SessionError) as e:
        c.incremental(sid, 1, uses_topic_ids=False, changed=[], forgotten=[])
    assert e.value.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    with pytest.raises(SessionError) as e:
        c.incremental(sid, 2, uses_topic_ids=True, changed=[], forgotten=[])
    assert e.value.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    with pytest.raises(SessionError) as e:
        c.incremental(sid + 1, 2, uses_topic_ids=False, changed=[], forgotten=[])
    assert e.value.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    # forgetting everything closes the session
    gone = [("t", 1), ("t", 2), ("t", 7)]
    assert c.incremental(sid, 2, uses_topic_ids=False, changed=[], forgotten=gone) is None
    assert c.size == 0 and c.total_partitions == 0


def test_responses_carry_what_changed_and_rotate_partitions_with_records() -> None:
    c, _ = cache()
    sid = c.create(reads(4), privileged=False, uses_topic_ids=False)
    session = c.incremental(sid, 1, uses_topic_ids=False, changed=[], forgotten=[])
    assert session is not None
    parts = c.partitions_of(session)
    same = LogReadResult(ErrorCode.NONE, 10, 10, 0)
    parts[0].result = LogReadResult(ErrorCode.NONE, 10, 10, 0, Region(100))  # type: ignore[arg-type]
    parts[1].result = same
    parts[2].result = LogReadResult(ErrorCode.NONE, 11, 11, 0)  # a new high watermark
    parts[3].result = LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    included = c.respond(session, 1, parts)
    assert included is not None
    assert [cp.index for cp in included] == [0, 2, 3]
    # partition 0 had records: it moves to the end of the session
    assert [cp.index for cp in session.partitions.values()] == [1, 2, 3, 0]
    # the error forgot partition 3's high watermark: it is answered once the error is gone
    session = c.incremental(sid, 2, uses_topic_ids=False, changed=[], forgotten=[])
    assert session is not None
    parts = c.partitions_of(session)
    for cp in parts:
        cp.result = LogReadResult(ErrorCode.NONE, 11 if cp.index == 2 else 10, 10, 0)
    parts[1].result = LogReadResult(ErrorCode.NONE, 11, 11, 0)
    included = c.respond(session, 2, parts)
    assert included is not None and [cp.index for cp in included] == [3]
    # a diverging epoch is always answered
    session = c.incremental(sid, 3, uses_topic_ids=False, changed=[], forgotten=[])
    assert session is not None
    parts = c.partitions_of(session)
    for cp in parts:
        cp.result = LogReadResult(ErrorCode.NONE, 11 if cp.index == 2 else 10, 10, 0)
    parts[0].result = LogReadResult(ErrorCode.NONE, 10, 10, 0, None, DivergingEpoch(1, 5))
    included = c.respond(session, 3, parts)
    assert included is not None and [cp.index for cp in included] == [1]
    # an answer built after another request moved the epoch on is refused
    assert c.respond(session, 2, parts) is None


def test_full_cache_refuses_a_new_consumer_session_until_one_is_stale() -> None:
    c, clock = cache(slots=2)
    a = c.create(reads(5), privileged=False, uses_topic_ids=False)
    b = c.create(reads(5), privileged=False, uses_topic_ids=False)
    # a bigger consumer session cannot evict sessions younger than the eviction time
    assert c.create(reads(50), privileged=False, uses_topic_ids=False) == INVALID_SESSION_ID
    assert c.refused == 1
    clock.ms += 60_000
    c.incremental(b, 1, uses_topic_ids=False, changed=[], forgotten=[])  # b is used
    clock.ms += 60_001
    # a was last used more than 120 s ago: stale, evicted for anyone
    new = c.create(reads(1), privileged=False, uses_topic_ids=False)
    assert new != INVALID_SESSION_ID
    assert c.get(a) is None and c.get(b) is not None and c.evictions == 1


def test_eviction_by_privilege_then_size() -> None:
    c, clock = cache(slots=2, eviction_ms=1000)
    small = c.create(reads(2), privileged=False, uses_topic_ids=False)
    big = c.create(reads(20), privileged=False, uses_topic_ids=False)
    # a follower's session evicts a consumer's at once (the smallest first)
    follower = c.create(reads(1), privileged=True, uses_topic_ids=False)
    assert follower != INVALID_SESSION_ID and c.get(small) is None and c.get(big) is not None
    # a consumer cannot evict a young follower session, nor a young consumer one
    assert c.create(reads(100), privileged=False, uses_topic_ids=False) == INVALID_SESSION_ID
    # once older than the eviction time (but used recently: not stale), sessions are
    # evictable by all, the least valuable first, only by a more valuable one
    for _ in range(3):
        clock.ms += 600
        for sid in (big, follower):
            session = c.get(sid)
            assert session is not None
            c.incremental(sid, session.epoch, uses_topic_ids=False, changed=[], forgotten=[])
    assert c.create(reads(20), privileged=False, uses_topic_ids=False) == INVALID_SESSION_ID
    bigger = c.create(reads(21), privileged=False, uses_topic_ids=False)
    assert bigger != INVALID_SESSION_ID and c.get(big) is None and c.get(follower) is not None


def test_closing_and_zero_slots() -> None:
    c, _ = cache(slots=0)
    assert c.create(reads(1), privileged=True, uses_topic_ids=False) == INVALID_SESSION_ID
    c, _ = cache()
    sid = c.create(reads(3), privileged=False, uses_topic_ids=True)
    assert c.close(sid) and not c.close(sid)
    assert c.size == 0 and c.total_partitions == 0
