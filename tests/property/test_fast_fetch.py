"""protocol.fast_fetch writes exactly what the generated FetchResponse encoder writes: both its
encoders, the pure-Python one and the compiled one (when it was built), in the same buffers."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import fast_fetch
from protocol.messages import SCHEMAS
from protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData

try:
    from protocol import _fast_fetch
except ImportError:  # pragma: no cover - built by pip install where a C compiler is available
    _fast_fetch = None  # type: ignore[assignment]

needs_compiled = pytest.mark.skipif(
    _fast_fetch is None, reason="protocol._fast_fetch was not built (no C compiler at install)"
)
ENCODERS = [
    pytest.param(fast_fetch.encode_py, id="python"),
    pytest.param(getattr(_fast_fetch, "encode", None), id="compiled", marks=needs_compiled),
]


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


@pytest.mark.parametrize("encode", ENCODERS)
@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(12, 18),
    head=st.tuples(st.integers(0, 1000), st.integers(-1, 100), st.integers(0, 2**31 - 1)),
    topics=st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.uuids(), st.lists(partition, max_size=4)),
        max_size=3,
    ),
)
def test_fast_fetch_matches_the_generated_encoder(encode, version, head, topics):
    by_id = version >= 13
    tuples = [((tid if by_id else name), parts) for name, tid, parts in topics]
    fast = encode(version, *head, tuples)
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


@pytest.mark.parametrize("encode", ENCODERS)
def test_many_partitions_and_large_records(encode):
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
        fast = encode(version, 0, 0, 0, tuples)
        assert fast is not None
        assert flatten(fast) == flatten(_generic(version, (0, 0, 0), topics))
        # every large or region payload is a buffer of its own; nothing else is
        payloads = {id(p[7]) for p in parts if p[7] is not None}
        alone = [x for x in fast if id(x) in payloads]
        assert len(alone) == sum(
            1 for p in parts if p[7] is not None and (len(p[7]) > 512 or isinstance(p[7], Region))
        )


@pytest.mark.parametrize("encode", ENCODERS)
def test_cases_it_leaves_to_the_generated_codec(encode):
    assert encode(11, 0, 0, 0, []) is None
    aborted = [("t", [(0, 0, 1, 1, 0, [object()], -1, b"")])]
    assert encode(12, 0, 0, 0, aborted) is None
    # a records length whose varint takes 4 bytes
    huge = [("t", [(0, 0, 1, 1, 0, None, -1, Region(b"")), (1, 0, 1, 1, 0, None, -1, Big())])]
    assert encode(12, 0, 0, 0, huge) is None


class Big:
    """A region of 2 MiB (the records length varint takes 4 bytes), without the bytes."""

    def __len__(self) -> int:
        return 2 * 1024 * 1024


def test_the_broker_uses_the_compiled_encoder_when_it_was_built():
    if os.environ.get("ODRADEK_NO_EXTENSIONS"):
        assert not fast_fetch.ACCELERATED and fast_fetch.encode is fast_fetch.encode_py
    else:
        assert (_fast_fetch is not None) == fast_fetch.ACCELERATED
        assert fast_fetch.encode is (_fast_fetch.encode if _fast_fetch else fast_fetch.encode_py)


def test_odradek_no_extensions_selects_the_python_encoder():
    env = {**os.environ, "ODRADEK_NO_EXTENSIONS": "1"}
    code = "from protocol import fast_fetch as f; print(f.ACCELERATED, f.encode is f.encode_py)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "True"]


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(12, 18),
    topics=st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.uuids(), st.lists(partition, max_size=4)),
        max_size=3,
    ),
)
def test_compiled_and_python_split_the_same_buffers(version, topics):
    by_id = version >= 13
    tuples = [((tid if by_id else name), parts) for name, tid, parts in topics]
    python = fast_fetch.encode_py(version, 0, 0, 0, tuples)
    compiled = _fast_fetch.encode(version, 0, 0, 0, tuples)
    assert python is not None and compiled is not None
    payloads = {id(p[7]) for _, _, parts in topics for p in parts if p[7] is not None}
    assert len(python) == len(compiled)
    for a, b in zip(python, compiled, strict=True):
        if id(a) in payloads:
            assert a is b  # a records object travelling alone, not copied
        else:
            assert id(b) not in payloads and bytes(a) == bytes(b)


@needs_compiled
@pytest.mark.parametrize(
    ("topics", "error"),
    [
        ([("t", [(0, 0, 1, 1, 0, None, -1)])], ValueError),  # 7 items
        ([("t", [(0, 0, 1, 1, 0, None, -1, b"", 9)])], ValueError),  # 9 items
        ([("t", [None])], TypeError),
        ([("t", [(0, "0", 1, 1, 0, None, -1, b"")])], TypeError),
        ([("t", [(2**31, 0, 1, 1, 0, None, -1, b"")])], OverflowError),
        ([("t", [(0, 2**15, 1, 1, 0, None, -1, b"")])], OverflowError),
        ([("t", [(0, 0, 2**63, 1, 0, None, -1, b"")])], OverflowError),
        ([("t", [(0, 0, 1, 1, 0, None, -(2**31) - 1, b"")])], OverflowError),
        ([("t", [(0, 0, 1, 1, 0, None, -1, object())])], TypeError),  # no len()
        (
            [("t", [(0, 0, 1, 1, 0, None, -1, memoryview(bytes(8))[::2])])],
            BufferError,  # not contiguous (encode_py: TypeError)
        ),
        ([(b"t", [])], TypeError),  # a name must be a str
        ([("t",)], ValueError),
        ([("t", 5)], TypeError),
        ([5], TypeError),
        (5, TypeError),
    ],
)
def test_compiled_refuses_bad_values_cleanly(topics, error):
    """Misuse by our own code raises (as struct.pack would); it never crashes or leaks."""
    keep = b"k" * 40
    before = sys.getrefcount(keep)
    for _ in range(50):
        with pytest.raises(error):
            _fast_fetch.encode(
                12,
                0,
                0,
                0,
                [("ok", [(0, 0, 1, 1, 0, None, -1, keep)]), *topics]
                if isinstance(topics, list)
                else topics,
            )
    assert sys.getrefcount(keep) == before


@needs_compiled
def test_compiled_holds_no_references_after_use():
    big = bytes(20000)
    small = b"s" * 10
    region = Region(b"r" * 10)
    tid = uuid.uuid4()
    counts = [sys.getrefcount(x) for x in (big, small, region, tid)]
    for _ in range(200):
        parts = _fast_fetch.encode(
            13,
            0,
            0,
            0,
            [
                (
                    tid,
                    [
                        (0, 0, 1, 1, 0, None, -1, big),
                        (1, 0, 1, 1, 0, [], -1, small),
                        (2, 0, 1, 1, 0, None, -1, region),
                    ],
                )
            ],
        )
        assert parts is not None
        del parts
        assert _fast_fetch.encode(12, 0, 0, 0, [("t", [(0, 0, 1, 1, 0, [1], -1, big)])]) is None
    assert [sys.getrefcount(x) for x in (big, small, region, tid)] == counts


@needs_compiled
def test_compiled_walks_a_snapshot_when_values_mutate_the_lists():
    """Python code the encoder runs (a region's __len__ here) may change the lists being walked;
    the encoder works on the sequences as they were when it took them and never crashes."""
    parts: list = []
    topics: list = []

    class Mutating:
        def __len__(self) -> int:
            parts.clear()
            topics.clear()
            return 3

    parts.extend((i, 0, 1, 1, 0, None, -1, Mutating()) for i in range(50))
    topics.append(("t", parts))
    snapshot = [("t", list(parts))]
    out = _fast_fetch.encode(12, 0, 0, 0, topics)
    assert out is not None
    assert sum(isinstance(p, Mutating) for p in out) == 50
    assert flatten([p for p in out if not isinstance(p, Mutating)]) == flatten(
        [p for p in fast_fetch.encode_py(12, 0, 0, 0, snapshot) if not isinstance(p, Mutating)]
    )


@needs_compiled
def test_compiled_inline_limit_is_the_codecs():
    from protocol.codegen import INLINE_RECORDS_MAX

    assert _fast_fetch.INLINE_RECORDS_MAX == INLINE_RECORDS_MAX


@needs_compiled
def test_compiled_topic_ids():
    """v13+: a topic id is written as its 16 bytes, None as the zero UUID; anything else is
    refused."""
    tid = uuid.uuid4()
    for topic, raw in ((tid, tid.bytes), (None, bytes(16))):
        parts = _fast_fetch.encode(13, 0, 0, 0, [(topic, [])])
        assert parts is not None
        assert b"".join(parts)[10:] == b"\x02" + raw + b"\x01\x00\x00"
    with pytest.raises((TypeError, AttributeError)):
        _fast_fetch.encode(13, 0, 0, 0, [("not-a-uuid", [])])
