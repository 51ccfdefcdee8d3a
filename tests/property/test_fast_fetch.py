"""protocol.fast_fetch writes exactly what the generated FetchResponse encoder writes."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import fast_fetch
from protocol.messages import SCHEMAS
from protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData


class Region:
    """A sized object that is not bytes-like (like the broker's file regions)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)


def flatten(parts: list) -> bytes:
    return b"".join(p.data if isinstance(p, Region) else bytes(p) for p in parts)


records = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.integers(100, 20000).map(lambda n: bytes(n)),
    st.integers(0, 3000).map(lambda n: Region(b"r" * n)),
)
partition = st.tuples(
    st.integers(0, 2**31 - 1),
    st.integers(-1, 120),
    st.integers(-1, 2**62),
    st.integers(-1, 2**62),
    st.integers(-1, 2**62),
    st.sampled_from([None, []]),
    st.integers(-1, 5),
    records,
)


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(12, 18),
    head=st.tuples(st.integers(0, 1000), st.integers(-1, 100), st.integers(0, 2**31 - 1)),
    topics=st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.uuids(), st.lists(partition, max_size=4)),
        max_size=3,
    ),
)
def test_fast_fetch_matches_the_generated_encoder(version, head, topics):
    by_id = version >= 13
    tuples = [((tid if by_id else name), parts) for name, tid, parts in topics]
    fast = fast_fetch.encode(version, *head, tuples)
    assert fast is not None
    assert flatten(fast) == flatten(_generic(version, head, topics))


def _generic(version, head, topics):
    by_id = version >= 13
    value = FetchResponse(
        throttle_time_ms=head[0],
        error_code=head[1],
        session_id=head[2],
        responses=[
            FetchableTopicResponse(
                topic=name if not by_id else "",
                topic_id=tid if by_id else uuid.UUID(int=0),
                partitions=[
                    PartitionData(
                        partition_index=p[0],
                        error_code=p[1],
                        high_watermark=p[2],
                        last_stable_offset=p[3],
                        log_start_offset=p[4],
                        aborted_transactions=p[5],
                        preferred_read_replica=p[6],
                        records=p[7],
                    )
                    for p in parts
                ],
            )
            for name, tid, parts in topics
        ],
    )
    generic: list = []
    SCHEMAS[1].response_encoder(version)(value, generic)
    return generic


def test_many_partitions_and_large_records():
    """A partition count that takes a 2-byte varint, records lengths at every varint width and
    around the inline limit, and regions of every size, against the generated encoder."""
    sizes = [0, 1, 126, 127, 511, 512, 513, 16382, 16383, 16384, 70000]
    parts = [
        (i, 0, 10 * i, 10 * i, 0, [] if i % 3 else None, -1, kind(sizes[i % len(sizes)]))
        for i in range(300)
        for kind in [bytes, lambda n: Region(b"r" * n), lambda n: None][i % 3 : i % 3 + 1]
    ]
    topics = [
        ("many", uuid.uuid4(), parts),
        ("none", uuid.uuid4(), []),
        ("one", uuid.uuid4(), parts[:1]),
    ]
    for version in (12, 13, 18):
        by_id = version >= 13
        tuples = [((tid if by_id else name), p) for name, tid, p in topics]
        fast = fast_fetch.encode(version, 0, 0, 0, tuples)
        assert fast is not None
        assert flatten(fast) == flatten(_generic(version, (0, 0, 0), topics))
        # every large or region payload is a buffer of its own; nothing else is
        payloads = {id(p[7]) for p in parts if p[7] is not None}
        alone = [x for x in fast if id(x) in payloads]
        assert len(alone) == sum(
            1 for p in parts if p[7] is not None and (len(p[7]) > 512 or isinstance(p[7], Region))
        )


def test_cases_it_leaves_to_the_generated_codec():
    assert fast_fetch.encode(11, 0, 0, 0, []) is None
    aborted = [("t", [(0, 0, 1, 1, 0, [object()], -1, b"")])]
    assert fast_fetch.encode(12, 0, 0, 0, aborted) is None
