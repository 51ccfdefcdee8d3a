"""``__consumer_offsets`` records: unreadable bytes raise CorruptGroupRecord, nothing else."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordination.group.records import (
    CorruptGroupRecord,
    GroupValue,
    MemberRecord,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
)

OFFSET_VALUE = offset_commit_value(42, 3, "meta", 1_700_000_000_000)
GROUP_VALUE = group_metadata_value(
    GroupValue(
        "consumer",
        7,
        "range",
        "m-1",
        1_700_000_000_000,
        (MemberRecord("m-1", "i-1", "client", "/127.0.0.1", 300, 100, b"sub", b"assign"),),
    )
)


def test_round_trips() -> None:
    assert parse_offset_value(OFFSET_VALUE).offset == 42
    assert parse_group_value(GROUP_VALUE).members[0].group_instance_id == "i-1"
    key = parse_key(offset_commit_key("g", "t", 5))
    assert key is not None and key.group == "g"


@pytest.mark.parametrize(
    ("data", "parse"),
    [
        (OFFSET_VALUE, parse_offset_value),
        (GROUP_VALUE, parse_group_value),
        (offset_commit_key("g", "t", 5), parse_key),
        (group_metadata_key("g"), parse_key),
    ],
    ids=["offset value", "group value", "offset key", "group key"],
)
def test_every_truncation_is_a_corrupt_group_record(
    data: bytes, parse: Callable[[bytes], object]
) -> None:
    for cut in range(len(data)):
        with pytest.raises(CorruptGroupRecord):
            parse(data[:cut])
