"""Our codecs against kio's and kafka-python's, byte for byte, for every schema we have.

For each (api, version, request/response) in ``protocol.messages.SCHEMAS`` and each oracle that
knows it (see tests/property/oracles.py): draw a value, encode it with ours, decode those bytes
with the oracle and encode the oracle's value again; the bytes must be identical. Then our decoder
reads the oracle's bytes back to the value we started from. New API modules are picked up
automatically; nothing here is per API except the explicit, commented lists below.

``ODRADEK_ORACLE_EXAMPLES`` sets the number of examples per case (default 15).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from protocol.messages import SCHEMAS, ApiSchema
from tests.property.oracles import (
    KAFKA_PYTHON_OLD,
    KIO,
    ORACLES,
    OracleCodec,
    kio_codec,
    kio_default_mismatches,
    long_value_overrides,
    oracle_codec,
)
from tests.property.strategies import struct_of
from tests.support.hypothesis_cases import given_data

EXAMPLES = int(os.environ.get("ODRADEK_ORACLE_EXAMPLES", "15"))

#: (oracle, api name, version or None for all, kind or None for both) -> why that oracle is not
#: used there although it has a class for it. Every entry names the oracle's limitation (or the
#: schema disagreement) it works around; remove it when the cause is gone.
SKIPS: dict[tuple[str, str, int | None, str | None], str] = {
    # kafka.protocol.old's DescribeAclsRequest_v2 / DescribeAclsResponse_v2 reuse the v1 SCHEMA
    # (legacy strings and arrays, no tagged fields), although v2 is the first flexible version.
    # kio and kafka-python's JSON classes both check v2.
    (KAFKA_PYTHON_OLD, "DescribeAcls", 2, None): "kafka.protocol.old: DescribeAcls v2 not flexible",
    # kafka.protocol.old's DescribeLogDirsRequest_v0 has one int32 partition per topic where the
    # protocol has an array of them; kio and kafka-python's JSON classes check v0.
    (
        KAFKA_PYTHON_OLD,
        "DescribeLogDirs",
        0,
        "request",
    ): "kafka.protocol.old: partitions not an array",
}

#: (api name, version, kind) that no oracle knows, with the reason. The coverage test fails on
#: any other (api, version, kind) without an oracle, so a new gap is never silent.
NO_ORACLE: dict[tuple[str, int, str], str] = {
    # ControlledShutdown exists only in ZooKeeper mode, which Kafka 4 removed: kio and
    # kafka-python 3 (Kafka 4.x definitions) have no class for it, kafka.protocol.old neither.
    # tests/unit/protocol/test_controlled_shutdown.py checks every version against bytes written
    # from the protocol guide.
    **{
        ("ControlledShutdown", v, kind): "ZooKeeper mode only: no oracle knows it"
        for v in range(4)
        for kind in ("request", "response")
    },
    # Kafka 4.4's newest versions, which kio and kafka-python 3 do not define yet:
    # tests/unit/protocol/test_kafka44_versions.py checks them against bytes written as Kafka
    # 4.4's generated classes write them, and the reference corpus against Kafka 4.4 itself
    **{
        (name, v, kind): "newer than every oracle's definitions (Kafka 4.4)"
        for name, v in (("ApiVersions", 5), ("DeleteGroups", 3), ("TxnOffsetCommit", 6))
        for kind in ("request", "response")
    },
    # v0 of the delegation token APIs, which Kafka 4 removed (kio's and kafka-python 3's
    # definitions start at v1): tests/unit/protocol/test_delegation_token_versions.py checks it
    # against bytes written from the protocol guide, and that it is v1's layout, which kio checks
    **{
        (name, 0, kind): "removed by Kafka 4: no oracle defines it; v0 is v1's layout"
        for name in (
            "CreateDelegationToken",
            "RenewDelegationToken",
            "ExpireDelegationToken",
            "DescribeDelegationToken",
        )
        for kind in ("request", "response")
    },
}


def _skip_reason(oracle: str, schema: ApiSchema, version: int, kind: str) -> str | None:
    for key in (
        (oracle, schema.name, version, kind),
        (oracle, schema.name, version, None),
        (oracle, schema.name, None, kind),
        (oracle, schema.name, None, None),
    ):
        if key in SKIPS:
            return SKIPS[key]
    return None


def _message(schema: ApiSchema, kind: str) -> Any:
    return schema.request if kind == "request" else schema.response


def _codec_or_none(oracle: str, schema: ApiSchema, version: int, kind: str) -> OracleCodec | None:
    try:
        return oracle_codec(
            oracle, _message(schema, kind), schema.key, version, kind, schema.is_flexible(version)
        )
    except LookupError:
        return None


def _versions(schema: ApiSchema) -> range:
    return range(schema.valid_versions.lo, schema.valid_versions.hi + 1)


def _cases() -> tuple[list[Any], dict[tuple[str, int, str], list[str]]]:
    cases = []
    coverage: dict[tuple[str, int, str], list[str]] = {}
    for schema in SCHEMAS.values():
        for version in _versions(schema):
            for kind in ("request", "response"):
                covered = coverage.setdefault((schema.name, version, kind), [])
                for oracle in ORACLES:
                    codec = _codec_or_none(oracle, schema, version, kind)
                    if codec is None:
                        continue
                    covered.append(oracle)
                    reason = _skip_reason(oracle, schema, version, kind)
                    marks = [pytest.mark.skip(reason=reason)] if reason else []
                    cases.append(
                        pytest.param(
                            schema,
                            version,
                            kind,
                            oracle,
                            id=f"{schema.name}{kind.capitalize()}-v{version}-{oracle}",
                            marks=marks,
                        )
                    )
    return cases, coverage


CASES, COVERAGE = _cases()
SCHEMAS_BY_NAME = {schema.name: schema for schema in SCHEMAS.values()}

_CODECS: dict[tuple[str, int, int, str], tuple[OracleCodec, st.SearchStrategy[Any]]] = {}


def _prepared(
    oracle: str, schema: ApiSchema, version: int, kind: str
) -> tuple[OracleCodec, st.SearchStrategy[Any]]:
    key = (oracle, schema.key, version, kind)
    if key not in _CODECS:
        codec = _codec_or_none(oracle, schema, version, kind)
        assert codec is not None
        cls = _message(schema, kind)
        overrides = {**long_value_overrides(cls, version), **codec.overrides}
        strategy = struct_of(cls, version, overrides=overrides)
        _CODECS[key] = (codec, strategy)
    return _CODECS[key]


def _first_difference(ours: bytes, theirs: bytes) -> str:
    n = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    lo = max(0, n - 8)
    return (
        f"lengths {len(ours)} (ours) vs {len(theirs)} (theirs); first difference at byte {n}:\n"
        f"  ours   [{lo}:] {ours[lo : n + 16].hex(' ')}\n"
        f"  theirs [{lo}:] {theirs[lo : n + 16].hex(' ')}"
    )


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("schema", "version", "kind", "oracle"), CASES)
def test_oracle_agrees(schema: ApiSchema, version: int, kind: str, oracle: str) -> None:
    codec, strategy = _prepared(oracle, schema, version, kind)
    if kind == "request":
        encode, decode = schema.request_encoder(version), schema.request_decoder(version)
    else:
        encode, decode = schema.response_encoder(version), schema.response_decoder(version)

    def body(data: st.DataObject) -> None:
        value = data.draw(strategy, label="value")
        parts: list[Any] = []
        encode(value, parts)
        ours = b"".join(bytes(p) for p in parts)

        theirs = codec.round_trip(ours)
        assert theirs == ours, f"{oracle} {codec.their_name}: " + _first_difference(ours, theirs)

        decoded, end = decode(memoryview(theirs), 0)
        assert end == len(theirs)
        assert decoded == value

    given_data(SETTINGS, body)


def test_every_version_has_an_oracle() -> None:
    """Each (api, version, kind) we have a schema for is checked by at least one oracle, or is
    listed in NO_ORACLE with the reason."""
    missing = {
        key
        for key, oracles in COVERAGE.items()
        if not [o for o in oracles if not _skip_reason(o, SCHEMAS_BY_NAME[key[0]], *key[1:])]
    }
    unexplained = sorted(missing - NO_ORACLE.keys())
    assert not unexplained, (
        f"no oracle checks these (add one, or list them in NO_ORACLE): {unexplained}"
    )
    stale = sorted(NO_ORACLE.keys() - missing)
    assert not stale, f"NO_ORACLE lists cases that an oracle now checks: {stale}"


KIO_CASES = [
    pytest.param(schema, version, kind, id=f"{schema.name}{kind.capitalize()}-v{version}")
    for schema in SCHEMAS.values()
    for version in _versions(schema)
    for kind in ("request", "response")
    if KIO in COVERAGE[(schema.name, version, kind)]
]


@pytest.mark.parametrize(("schema", "version", "kind"), KIO_CASES)
def test_defaults_agree_with_kio(schema: ApiSchema, version: int, kind: str) -> None:
    """Our defaults are Kafka's: a tagged field is written only when it differs from its
    default, and a field absent from a version decodes to its default. Random values seldom hit
    a default, so the defaults are compared directly."""
    ours = _message(schema, kind)
    theirs, _ = kio_codec(schema.key, version, kind)
    assert kio_default_mismatches(ours, theirs, version, schema.is_flexible(version)) == []
