"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them (KIP-84).

* Credentials are stored as Kafka stores them (``ScramCredentialUtils``), under the mechanism's
  name in the user's entity config: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,
  iterations=<n>``. No password is ever stored: AlterUserScramCredentials carries the salted
  password, from which :func:`credential_from_salted_password` derives the keys.
* :class:`ScramServer` is the server side of one exchange (Kafka's ``ScramSaslServer``):
  client-first (``n,,n=<user>,r=<nonce>``) -> server-first (``r=<nonce>,s=<salt>,i=<n>``) ->
  client-final (``c=biws,r=<nonce>,p=<proof>``) -> server-final (``v=<signature>``). An unknown
  user and a wrong password fail the same way (the reason is logged, the client learns only
  that authentication failed).
* :class:`ScramClient` is the client side (inter-broker connections, the command line, tests),
  in :mod:`protocol.scram`.

Sans-IO: tokens in, tokens out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from protocol.scram import MECHANISMS, SaslClient, ScramClient, ScramError, salted_password
from protocol.scram import b64 as _b64
from protocol.scram import hmac_digest as _hmac

__all__ = [
    "MECHANISMS",
    "SaslClient",
    "ScramClient",
    "ScramError",
    "salted_password",
]

#: the mechanism's code in DescribeUserScramCredentials/AlterUserScramCredentials
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_BY_TYPE = {v: k for k, v in MECHANISM_TYPES.items()}
#: Kafka refuses more iterations than this in AlterUserScramCredentials
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


#: (mechanism, username) -> the stored credential, or None for an unknown user
CredentialLookup = Callable[[str, str], ScramCredential | None]
#: (mechanism, token id) -> a delegation token's credential, its owner's name and its expiry
#: timestamp (ms), or None for an unknown token (KIP-48)
TokenLookup = Callable[[str, str], tuple[ScramCredential, str, int] | None]


def credential_to_string(c: ScramCredential) -> str:
    return (
        f"salt={_b64(c.salt)},stored_key={_b64(c.stored_key)},"
        f"server_key={_b64(c.server_key)},iterations={c.iterations}"
    )


def credential_from_string(text: str) -> ScramCredential:
    """Raises ValueError for anything but Kafka's four fields."""
    props = {}
    for token in text.split(","):
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ValueError("credentials not valid")
        props[key] = value
    if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError("credentials not valid")
    try:
        return ScramCredential(
            base64.b64decode(props["salt"], validate=True),
            base64.b64decode(props["stored_key"], validate=True),
            base64.b64decode(props["server_key"], validate=True),
            int(props["iterations"]),
        )
    except ValueError:
        raise ValueError("credentials not valid") from None


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    h = MECHANISMS[mechanism][0]
    client_key = _hmac(h, salted, b"Client Key")
    stored_key = hashlib.new(h, client_key).digest()
    server_key = _hmac(h, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def new_credential(mechanism: str, password: str, iterations: int = 4096) -> ScramCredential:
    salt = secrets.token_bytes(32)
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def _saslname_to_username(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise ScramError("invalid username encoding in client-first message")
    return name.replace("=2C", ",").replace("=3D", "=")


_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<saslname>[^,]*),r=(?P<nonce>[^,]+)(?P<ext>(?:,[^,]*)*))"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without>c=(?P<channel>[^,]*),r=(?P<nonce>[^,]*)(?:,[^,]*)*?),p=(?P<proof>[^,]*)"
)


class ScramServer:
    """One server-side SCRAM exchange. ``lookup(username)`` gives the stored credential (or
    None for an unknown user). With the ``tokenauth=true`` extension the user name is a
    delegation token's id, looked up with ``token_lookup`` (Kafka's
    ``DelegationTokenCredentialCallback``); the exchange then authenticates the token's owner
    (:attr:`authorization_id`) and :attr:`token_expiry_ms` is set."""

    def __init__(
        self,
        mechanism: str,
        lookup: CredentialLookup,
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.hash_name, self.min_iterations = MECHANISMS[mechanism]
        self._lookup = lookup
        self._token_lookup = token_lookup
        self.complete = False
        #: the SCRAM user name (a token id for a token)
        self.username: str | None = None
        #: whom the exchange authenticates: the user, or a token's owner
        self.authorization_id: str | None = None
        #: a token's expiry timestamp (ms), None without a token
        self.token_expiry_ms: int | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's next token; raises ScramError."""
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise ScramError("SCRAM message is not UTF-8") from None
        if self._credential is None and not self.complete:
            return self._first(text)
        if not self.complete:
            return self._final(text)
        raise ScramError("unexpected SCRAM message after the exchange completed")

    def _first(self, text: str) -> bytes:
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise ScramError(
                "invalid SCRAM client-first message (channel binding is not supported)"
            )
        username = _saslname_to_username(m.group("saslname"))
        extensions = dict(e.partition("=")[::2] for e in m.group("ext").split(",") if e)
        credential: ScramCredential | None
        if extensions.get("tokenauth", "").lower() == "true":
            found = self._token_lookup(self.mechanism, username) if self._token_lookup else None
            if found is None:
                raise ScramError(f"Token Authentication failed: Invalid tokenId : {username}")
            credential, self.authorization_id, self.token_expiry_ms = found
        else:
            credential = self._lookup(self.mechanism, username)
            if credential is None:
                raise ScramError(f"unknown user {username!r} for {self.mechanism}")
            self.authorization_id = username
        authzid = m.group("authzid") or ""
        if authzid and authzid != username:
            raise ScramError(
                "authorization id differs from the username",
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
            )
        if credential.iterations < self.min_iterations:
            raise ScramError(
                f"stored credential of {username!r} has {credential.iterations} iterations, "
                f"fewer than {self.min_iterations}"
            )
        self.username = username
        self._credential = credential
        self._nonce = m.group("nonce") + secrets.token_urlsafe(24)
        self._client_first_bare = m.group("bare")
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        credential = self._credential
        assert credential is not None
        m = _CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise ScramError("invalid SCRAM client-final message")
        # Kafka checks that the nonce ends with the server's (librdkafka before 2.1 sends its
        # own nonce again in front of it)
        if not m.group("nonce").endswith(self._nonce):
            raise ScramError("invalid client nonce in the final client message")
        try:
            proof = base64.b64decode(m.group("proof"), validate=True)
        except ValueError:
            raise ScramError("invalid SCRAM client proof encoding") from None
        auth_message = (
            f"{self._client_first_bare},{self._server_first},{m.group('without')}".encode()
        )
        client_signature = _hmac(self.hash_name, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError(f"invalid client credentials for {self.username!r}")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        computed = hashlib.new(self.hash_name, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise ScramError(f"invalid password for user {self.username!r}")
        server_signature = _hmac(self.hash_name, credential.server_key, auth_message)
        self.complete = True
        self._credential = None
        return f"v={_b64(server_signature)}".encode()
