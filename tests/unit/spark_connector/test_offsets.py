"""Admission control and range planning, on plain numbers and a clock parameter."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from spark_connector.offsets import OffsetRange, TriggerDelay, plan_ranges, rate_limit, split_range


def test_rate_limit_shares_in_proportion_and_exactly():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 5}
    end = rate_limit(start, latest, 100)
    sizes = {tp: end[tp] - start[tp] for tp in start}
    assert sum(sizes.values()) == 100
    assert sizes[("t", 0)] == 75 and sizes[("t", 1)] == 25 and sizes[("t", 2)] == 0
    assert rate_limit(start, latest, 1000) == latest


def test_rate_limit_never_starves_forever():
    start = {("t", p): 0 for p in range(5)}
    latest = {("t", p): 10 for p in range(5)}
    seen = set()
    for _ in range(10):
        end = rate_limit(start, latest, 2)
        assert sum(end[tp] - start[tp] for tp in start) == 2
        seen |= {tp for tp in start if end[tp] > start[tp]}
        start = end
    assert len(seen) == 5


@given(
    st.dictionaries(
        st.integers(0, 20),
        st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 10**6),
)
def test_rate_limit_properties(parts, limit):
    start = {("t", p): a for p, (a, _) in parts.items()}
    latest = {("t", p): a + b for p, (a, b) in parts.items()}
    end = rate_limit(start, latest, limit)
    assert set(end) == set(latest)
    for tp in latest:
        assert start[tp] <= end[tp] <= latest[tp]
    total = sum(latest[tp] - start[tp] for tp in latest)
    assert sum(end[tp] - start[tp] for tp in latest) == min(total, limit)


def test_trigger_delay_follows_spark():
    d = TriggerDelay(min_rows=100, max_delay_ms=1000)
    assert d.admit(5, now_ms=10_000)  # the first batch is never held back
    assert not d.admit(50, now_ms=10_500)  # too few, too soon
    assert d.admit(100, now_ms=10_600)  # enough records
    assert not d.admit(0, now_ms=11_000)
    assert d.admit(1, now_ms=11_600)  # the delay has passed since the last batch


def test_plan_ranges_drops_empty_and_splits():
    start = {("a", 0): 0, ("a", 1): 10, ("b", 0): 7}
    end = {("a", 0): 100, ("a", 1): 10, ("b", 0): 17}
    assert plan_ranges(start, end) == [OffsetRange("a", 0, 0, 100), OffsetRange("b", 0, 7, 17)]
    ranges = plan_ranges(start, end, min_partitions=11)
    assert sum(r.size for r in ranges) == 110 and len(ranges) >= 10
    assert [r for r in ranges if r.topic == "b"] == [OffsetRange("b", 0, 7, 17)]
    capped = plan_ranges(start, end, max_records_per_partition=30)
    assert max(r.size for r in capped) <= 30 and sum(r.size for r in capped) == 110
    # min partitions already met: no split
    assert len(plan_ranges(start, end, min_partitions=2)) == 2


@given(st.integers(0, 10**6), st.integers(1, 5000), st.integers(1, 50))
def test_split_range_is_contiguous_and_even(begin, size, parts):
    r = OffsetRange("t", 0, begin, begin + size)
    pieces = split_range(r, parts)
    assert pieces[0].from_offset == begin and pieces[-1].until_offset == begin + size
    for a, b in itertools.pairwise(pieces):
        assert a.until_offset == b.from_offset
    sizes = [p.size for p in pieces]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    assert len(pieces) == min(parts, size)
