"""The client side of SASL/PLAIN and SASL/SCRAM-SHA-256/512 (RFC 5802, RFC 7677, as Kafka uses
them, KIP-84), and the SCRAM primitives the broker's server side shares: sans-IO, tokens in,
tokens out. Used by the broker's inter-broker connections and by the ``odradek`` command line
(which also salts passwords for AlterUserScramCredentials)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping

#: mechanism -> (hash name, Kafka's minimum iterations)
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 4096), "SCRAM-SHA-512": ("sha512", 4096)}


class ScramError(Exception):
    """The exchange failed; ``str()`` is for the log, :attr:`client_message` for the client."""

    def __init__(self, log_message: str, client_message: str | None = None) -> None:
        super().__init__(log_message)
        self.client_message = client_message


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hmac_digest(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password.encode(), salt, iterations)


def username_to_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """The client side of one exchange: :meth:`first`, then :meth:`final` with the server's
    first message, then :meth:`verify` with its final message."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        """``extensions``: SCRAM extensions after the nonce (Kafka's ``ScramExtensions``:
        ``{"tokenauth": "true"}`` logs in with a delegation token, its id as ``username`` and
        its base64 HMAC as ``password``)."""
        self.mechanism = mechanism
        self.hash_name = MECHANISMS[mechanism][0]
        self.username = username
        self.password = password
        self.nonce = secrets.token_urlsafe(24)
        extra = "".join(f",{k}={v}" for k, v in (extensions or {}).items())
        self._bare = f"n={username_to_saslname(username)},r={self.nonce}{extra}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"]), int(fields["i"])
        if not nonce.startswith(self.nonce):
            raise ScramError("server nonce does not extend the client nonce")
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = hmac_digest(self.hash_name, salted, b"Client Key")
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = hmac_digest(self.hash_name, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac_digest(self.hash_name, salted, b"Server Key")
        self._server_signature = hmac_digest(self.hash_name, server_key, auth_message)
        return f"{without_proof},p={b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode()
        if text.startswith("e="):
            raise ScramError(f"server refused: {text[2:]}")
        if not text.startswith("v=") or not hmac.compare_digest(
            base64.b64decode(text[2:]), self._server_signature
        ):
            raise ScramError("invalid server signature")


class SaslClient:
    """The client side of PLAIN or SCRAM: :meth:`first`, then :meth:`step` with each server
    token until :attr:`done`."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self.done = False
        self._plain = (username, password) if mechanism == "PLAIN" else None
        self._scram = ScramClient(mechanism, username, password) if self._plain is None else None
        self._round = 0

    def first(self) -> bytes:
        if self._plain is not None:
            return f"\0{self._plain[0]}\0{self._plain[1]}".encode()
        assert self._scram is not None
        return self._scram.first()

    def step(self, server_token: bytes) -> bytes | None:
        """The next token to send (None: nothing more)."""
        self._round += 1
        if self._plain is not None:
            self.done = True
            return None
        assert self._scram is not None
        if self._round == 1:
            return self._scram.final(server_token)
        self._scram.verify(server_token)
        self.done = True
        return None
