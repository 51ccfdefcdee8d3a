"""SASL/OAUTHBEARER (KIP-255) as Kafka's OAuthBearerSaslServer and its unsecured validator
answer: the client's initial response, the JSON error a refused token gets and the failure
once the client acknowledges it, and the unsecured JWS checks (exp, iat, the principal and
scope claims, the options of the listener's OAuthBearerLoginModule)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from broker.security.oauthbearer import (
    OAuthBearerConfigError,
    OAuthBearerError,
    OAuthBearerServer,
    UnsecuredValidator,
)

NOW_MS = 1_800_000_000_000
NOW = NOW_MS // 1000


def b64(doc: Any) -> str:
    """Standard base64 without padding (what librdkafka and Kafka's login module write)."""
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return base64.b64encode(raw).decode().rstrip("=")


def jws(claims: dict[str, Any], header: dict[str, Any] | None = None, signature: str = "") -> str:
    return f"{b64(header or {'alg': 'none'})}.{b64(claims)}.{signature}"


def initial(token: str, *, authzid: str = "", extensions: str = "") -> bytes:
    gs2 = f"n,{'a=' + authzid if authzid else ''},"
    return f"{gs2}\x01auth=Bearer {token}\x01{extensions}\x01".encode()


def validator(**options: str) -> UnsecuredValidator:
    v = UnsecuredValidator.from_options(options)
    v.clock_ms = lambda: NOW_MS
    return v


GOOD = {"sub": "alice", "iat": NOW - 10, "exp": NOW + 3600, "scope": "read write"}
#: GOOD's claims with a '?>' run (standard base64 '/' and '+') in the URL-safe alphabet
URL_SAFE_CLAIMS = b64({**GOOD, "x": "???>>>"}).replace("+", "-").replace("/", "_")
assert "-" in URL_SAFE_CLAIMS or "_" in URL_SAFE_CLAIMS


def test_a_valid_token_authenticates_its_subject() -> None:
    server = OAuthBearerServer(validator())
    assert server.evaluate(initial(jws(GOOD), extensions="traceId=abc\x01")) == b""
    assert server.complete and server.token is not None
    assert server.token.principal_name == "alice"
    assert server.token.lifetime_ms == (NOW + 3600) * 1000
    assert server.token.start_time_ms == (NOW - 10) * 1000
    assert server.extensions == {"traceId": "abc"}


@pytest.mark.parametrize(
    ("claims", "header", "signature"),
    [
        ({**GOOD, "exp": NOW - 1}, None, ""),  # expired
        ({k: v for k, v in GOOD.items() if k != "exp"}, None, ""),  # no exp
        ({**GOOD, "exp": "soon"}, None, ""),  # exp not a number
        ({k: v for k, v in GOOD.items() if k != "sub"}, None, ""),  # no subject
        ({**GOOD, "sub": "  "}, None, ""),  # blank subject
        ({**GOOD, "sub": 42}, None, ""),  # subject not a string
        ({**GOOD, "iat": NOW + 60}, None, ""),  # issued in the future
        ({**GOOD, "iat": NOW + 7200, "exp": NOW + 3600}, None, ""),  # iat after exp
        (GOOD, {"alg": "HS256"}, ""),  # signed: not an unsecured JWS
        (GOOD, None, "c2lnbmF0dXJl"),  # a signature
        ({**GOOD, "scope": 7}, None, ""),  # scope neither string nor list
    ],
)
def test_refused_tokens_get_the_json_error_then_fail(
    claims: dict[str, Any], header: dict[str, Any] | None, signature: str
) -> None:
    server = OAuthBearerServer(validator())
    challenge = server.evaluate(initial(jws(claims, header, signature)))
    assert challenge == b'{"status":"invalid_token"}'
    assert not server.complete and server.refusal
    with pytest.raises(OAuthBearerError) as e:
        server.evaluate(b"\x01")
    assert e.value.client_message == '{"status":"invalid_token"}'


def test_malformed_serializations_are_invalid_tokens() -> None:
    for token in (
        "abc",
        f"{b64({'alg': 'none'})}..",
        f"{b64({'alg': 'none'})}.{b64(GOOD)}.sig.",
        f"{b64({'alg': 'none'})}.abc~.",  # not base64
        f"{b64({'alg': 'none'})}.{b64(b'not json')}.",
        # the URL-safe alphabet: Kafka decodes with Java's basic decoder, which refuses it
        f"{b64({'alg': 'none'})}.{URL_SAFE_CLAIMS}.",
    ):
        server = OAuthBearerServer(validator())
        assert server.evaluate(initial(token)) == b'{"status":"invalid_token"}', token


def test_a_header_without_an_algorithm_fails_at_once() -> None:
    server = OAuthBearerServer(validator())
    with pytest.raises(OAuthBearerError) as e:
        server.evaluate(initial(jws(GOOD, header={"typ": "JWT"})))
    assert e.value.client_message is None


def test_a_required_scope_missing_is_insufficient_scope() -> None:
    server = OAuthBearerServer(validator(unsecuredValidatorRequiredScope="read admin"))
    assert server.evaluate(initial(jws(GOOD))) == (
        b'{"status":"insufficient_scope", "scope":"[read, admin]"}'
    )
    ok = OAuthBearerServer(validator(unsecuredValidatorRequiredScope=" read  write "))
    assert ok.evaluate(initial(jws({**GOOD, "scope": ["write", "read", "x"]}))) == b""


def test_the_options_name_other_claims_and_allow_clock_skew() -> None:
    v = validator(
        unsecuredValidatorPrincipalClaimName="client_id",
        unsecuredValidatorScopeClaimName="scp",
        unsecuredValidatorAllowableClockSkewMs="5000",
    )
    # issued a little in the future, and expired a little ago: within the skew
    for token in (
        {"client_id": "svc", "exp": NOW + 60, "iat": NOW + 3, "scp": ["a"]},
        {"client_id": "svc", "exp": NOW - 2, "scp": ["a"]},
    ):
        server = OAuthBearerServer(v)
        assert server.evaluate(initial(jws(token))) == b"", token
        assert server.token is not None and server.token.principal_name == "svc"
        assert server.token.scope == frozenset({"a"})
    late = OAuthBearerServer(v)
    assert late.evaluate(initial(jws({"client_id": "svc", "exp": NOW - 6}))) != b""


@pytest.mark.parametrize(
    "options",
    [
        {"unsecuredValidatorAllowableClockSkewMs": "-1"},
        {"unsecuredValidatorAllowableClockSkewMs": "soon"},
        {"unsecuredValidatorRequiredScope": 'a "b"'},
    ],
)
def test_unusable_options_are_refused(options: dict[str, str]) -> None:
    with pytest.raises(OAuthBearerConfigError):
        UnsecuredValidator.from_options(options)


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"n,,\x01\x01",  # no auth
        b"n,,\x01auth=Bearer\x01\x01",  # no token
        b"n,,\x01auth=Basic abc.def.\x01\x01",  # another scheme
        b"n,,\x01auth=Bearer abc.def.\x01",  # no final separator
        b"y,,\x01auth=Bearer abc.def.\x01\x01",  # a GS2 header Kafka refuses
        b"n,,\x01auth=Bearer abc.def.\x011x=2\x01\x01",  # an extension key not letters
        b"n,,\x01auth=Bearer \xff\x01\x01",  # not UTF-8
    ],
)
def test_a_malformed_initial_response_fails_at_once(message: bytes) -> None:
    server = OAuthBearerServer(validator())
    with pytest.raises(OAuthBearerError) as e:
        server.evaluate(message)
    assert e.value.client_message is None


def test_an_authorization_id_must_be_the_tokens_principal() -> None:
    assert OAuthBearerServer(validator()).evaluate(initial(jws(GOOD), authzid="alice")) == b""
    server = OAuthBearerServer(validator())
    with pytest.raises(OAuthBearerError) as e:
        server.evaluate(initial(jws(GOOD), authzid="bob"))
    assert e.value.client_message == (
        "Authentication failed: Client requested an authorization id (bob) that is different "
        "from the token's principal name (alice)"
    )


def test_after_an_error_a_new_initial_response_may_still_succeed() -> None:
    server = OAuthBearerServer(validator())
    assert server.evaluate(initial(jws({**GOOD, "exp": NOW - 1}))).startswith(b'{"status"')
    assert server.evaluate(initial(jws(GOOD))) == b""
    assert server.complete


def test_an_acknowledgement_without_an_error_is_a_malformed_message() -> None:
    with pytest.raises(OAuthBearerError):
        OAuthBearerServer(validator()).evaluate(b"\x01")


# --- a listener's OAUTHBEARER settings (ListenerSasl.from_config) ------------------------------

PREFIX = "listener.name.sasl_plaintext.oauthbearer."
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def _listener(**settings: str) -> Any:
    from broker.config import BrokerConfig
    from broker.security.sasl import ListenerSasl, ScramCredentialCache

    config = BrokerConfig.from_dict(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            **{PREFIX + k: v for k, v in settings.items()},
        }
    )
    return ListenerSasl.from_config(config, "SASL_PLAINTEXT", ScramCredentialCache())


def test_the_listener_takes_the_unsecured_validators_options() -> None:
    sasl = _listener(
        **{
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka" ;'
        }
    )
    assert isinstance(sasl.oauth_validator, UnsecuredValidator)
    assert sasl.oauth_validator.required_scope == ["kafka"]
    assert isinstance(_listener().oauth_validator, UnsecuredValidator)


def test_the_listener_reads_a_jwks_file(tmp_path: Any) -> None:
    from broker.security.oauth_jwks import JwtValidator
    from tests.support.oauth_idp import SigningKey

    key = SigningKey("ES256", "file-key")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [key.jwk]}))
    sasl = _listener(
        **{
            "sasl.server.callback.handler.class": VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(),
            "sasl.oauthbearer.expected.audience": "kafka,other",
        }
    )
    validator = sasl.oauth_validator
    assert isinstance(validator, JwtValidator)
    assert validator.expected_audience == ("kafka", "other")
    assert [k.kid for k in validator.jwks.keys] == ["file-key"]


@pytest.mark.parametrize(
    "settings",
    [
        {"sasl.server.callback.handler.class": "com.example.MyHandler"},
        {"sasl.server.callback.handler.class": VALIDATOR},  # no JWKS URL
        {
            "sasl.server.callback.handler.class": VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json",
        },
        {"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"},
        {
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs="-5";'
        },
    ],
)
def test_unusable_listener_settings_stop_the_start_up(settings: dict[str, str]) -> None:
    from broker.config import ConfigError

    with pytest.raises(ConfigError):
        _listener(**settings)
