"""int16-version-prefixed data (Kafka's MessageUtil.toVersionPrefixedBytes)."""

from __future__ import annotations

import pytest

from protocol.codegen import decode_version_prefixed, encode_version_prefixed
from protocol.errors import MalformedMessage
from protocol.schema import INT32, STRING, f, message

Sample = message(
    "Sample",
    api_key=-1,
    kind="data",
    valid="0-2",
    flexible="2+",
    fields=[f("name", STRING), f("count", INT32, "1+", default=-1)],
)


def test_round_trip_every_version() -> None:
    for version in range(3):
        data = encode_version_prefixed(Sample, version, Sample(name="x", count=7))
        assert data[:2] == version.to_bytes(2, "big")
        got_version, value = decode_version_prefixed(Sample, memoryview(data))
        assert (got_version, value.name) == (version, "x")
        assert value.count == (7 if version >= 1 else -1)


def test_truncated_and_unknown_versions_are_malformed() -> None:
    data = encode_version_prefixed(Sample, 1, Sample(name="x", count=7))
    for cut in range(len(data)):
        with pytest.raises(MalformedMessage):
            decode_version_prefixed(Sample, data[:cut])
    for version in (-1, 3):
        with pytest.raises(MalformedMessage, match="unknown Sample version"):
            decode_version_prefixed(Sample, version.to_bytes(2, "big", signed=True) + data[2:])


def test_newer_versions_read_as_the_newest() -> None:
    data = encode_version_prefixed(Sample, 2, Sample(name="x", count=7))
    newer = (9).to_bytes(2, "big") + data[2:] + b"more fields"
    assert decode_version_prefixed(Sample, newer, newer_as_latest=True)[0] == 2
    with pytest.raises(MalformedMessage):
        decode_version_prefixed(Sample, (-1).to_bytes(2, "big", signed=True), newer_as_latest=True)
