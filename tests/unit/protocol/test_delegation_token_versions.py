"""Version 0 of the delegation token APIs (KIP-48), which Kafka 4 removed, so that kio and
kafka-python 3 (Kafka 4.x definitions) have no class for it: against bytes written field by
field from the protocol guide (int16-length strings, int32-length bytes and arrays). v1 has the
same layout (it changed only when a throttle applies, KIP-219), which the oracles check."""

from __future__ import annotations

import struct

import pytest

from protocol.messages.create_delegation_token import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
)
from protocol.messages.describe_delegation_token import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
)
from protocol.messages.expire_delegation_token import (
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
)
from protocol.messages.renew_delegation_token import (
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from tests.support.frames import request_body as _request_body
from tests.support.frames import response_body


def s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def b(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def request_body(key: int, version: int, body: object) -> bytes:
    return _request_body(key, version, body, flexible=False)


#: response header v0: the correlation id
HEADER = i32(9)
HMAC = bytes(range(64))


@pytest.mark.parametrize("version", [0, 1])
def test_create(version: int) -> None:
    request = CreateDelegationTokenRequest(
        renewers=[CreatableRenewers(principal_type="User", principal_name="bob")],
        max_lifetime_ms=3_600_000,
    )
    assert request_body(38, version, request) == (i32(1) + s("User") + s("bob") + i64(3_600_000))
    response = CreateDelegationTokenResponse(
        error_code=0,
        principal_type="User",
        principal_name="alice",
        issue_timestamp_ms=1,
        expiry_timestamp_ms=2,
        max_timestamp_ms=3,
        token_id="tok",
        hmac=HMAC,
        throttle_time_ms=5,
    )
    assert response_body(38, version, response, HEADER) == (
        i16(0) + s("User") + s("alice") + i64(1) + i64(2) + i64(3) + s("tok") + b(HMAC) + i32(5)
    )


@pytest.mark.parametrize("version", [0, 1])
def test_renew_and_expire(version: int) -> None:
    assert request_body(
        39, version, RenewDelegationTokenRequest(hmac=HMAC, renew_period_ms=-1)
    ) == b(HMAC) + i64(-1)
    assert request_body(
        40, version, ExpireDelegationTokenRequest(hmac=HMAC, expiry_time_period_ms=60_000)
    ) == b(HMAC) + i64(60_000)
    for key, cls in ((39, RenewDelegationTokenResponse), (40, ExpireDelegationTokenResponse)):
        response = cls(error_code=66, expiry_timestamp_ms=-1, throttle_time_ms=0)
        assert response_body(key, version, response, HEADER) == i16(66) + i64(-1) + i32(0)


@pytest.mark.parametrize("version", [0, 1])
def test_describe(version: int) -> None:
    everyone = DescribeDelegationTokenRequest(owners=None)
    assert request_body(41, version, everyone) == i32(-1)
    some = DescribeDelegationTokenRequest(
        owners=[DescribeDelegationTokenOwner(principal_type="User", principal_name="alice")]
    )
    assert request_body(41, version, some) == i32(1) + s("User") + s("alice")
    response = DescribeDelegationTokenResponse(
        error_code=0,
        tokens=[
            DescribedDelegationToken(
                principal_type="User",
                principal_name="alice",
                issue_timestamp=1,
                expiry_timestamp=2,
                max_timestamp=3,
                token_id="tok",
                hmac=HMAC,
                renewers=[
                    DescribedDelegationTokenRenewer(principal_type="User", principal_name="bob")
                ],
            )
        ],
        throttle_time_ms=0,
    )
    assert response_body(41, version, response, HEADER) == (
        i16(0)
        + i32(1)
        + s("User")
        + s("alice")
        + i64(1)
        + i64(2)
        + i64(3)
        + s("tok")
        + b(HMAC)
        + i32(1)
        + s("User")
        + s("bob")
        + i32(0)
    )
