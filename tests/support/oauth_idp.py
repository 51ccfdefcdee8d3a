"""A small OAuth identity provider for the tests (KIP-768): signing keys made with the
``cryptography`` package, a JWKS and a token endpoint (the client-credentials grant) on a
loopback HTTP server, as an OIDC provider serves them."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

HASHES = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}


def b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def b64u_int(value: int, size: int | None = None) -> str:
    return b64u(value.to_bytes(size or (value.bit_length() + 7) // 8, "big"))


class SigningKey:
    """A private key of the provider (RS*, PS* or ES256/ES384) with its public JWK."""

    def __init__(self, alg: str, kid: str) -> None:
        self.alg, self.kid = alg, kid
        if alg.startswith(("RS", "PS")):
            self.private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            numbers = self.private.public_key().public_numbers()
            self.jwk = {
                "kty": "RSA",
                "kid": kid,
                "use": "sig",
                "n": b64u_int(numbers.n),
                "e": b64u_int(numbers.e),
            }
        else:
            self.size = 32 if alg == "ES256" else 48
            self.private = ec.generate_private_key(
                ec.SECP256R1() if alg == "ES256" else ec.SECP384R1()
            )
            numbers = self.private.public_key().public_numbers()
            self.jwk = {
                "kty": "EC",
                "kid": kid,
                "crv": "P-256" if alg == "ES256" else "P-384",
                "x": b64u_int(numbers.x, self.size),
                "y": b64u_int(numbers.y, self.size),
            }

    def sign(self, message: bytes) -> bytes:
        h = HASHES[self.alg[2:]]
        if self.alg.startswith("RS"):
            return bytes(self.private.sign(message, padding.PKCS1v15(), h))
        if self.alg.startswith("PS"):
            pss = padding.PSS(mgf=padding.MGF1(h), salt_length=h.digest_size)
            return bytes(self.private.sign(message, pss, h))
        r, s = decode_dss_signature(self.private.sign(message, ec.ECDSA(h)))
        return r.to_bytes(self.size, "big") + s.to_bytes(self.size, "big")

    def token(self, claims: dict[str, Any], **header: Any) -> str:
        head = {"alg": self.alg, "kid": self.kid, "typ": "JWT", **header}
        signed = f"{b64u(json.dumps(head).encode())}.{b64u(json.dumps(claims).encode())}"
        return f"{signed}.{b64u(self.sign(signed.encode()))}"


class IdentityProvider:
    """``/jwks`` (the public keys) and ``/token`` (client credentials -> a signed JWT whose
    ``sub`` is the client id, audience ``kafka``) at :attr:`url`."""

    def __init__(self, key: SigningKey, *, issuer: str = "https://idp.test") -> None:
        self.key = key
        self.issuer = issuer
        self.url = ""
        self.tokens_issued = 0

    def claims(self, sub: str, *, lifetime_s: int = 3600, **extra: Any) -> dict[str, Any]:
        now = int(time.time())
        return {
            "sub": sub,
            "iat": now,
            "exp": now + lifetime_s,
            "aud": "kafka",
            "iss": self.issuer,
            "scope": "kafka",
            **extra,
        }

    def jwks(self) -> bytes:
        return json.dumps({"keys": [self.key.jwk]}).encode()

    @contextmanager
    def serving(self) -> Iterator[IdentityProvider]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, body: bytes, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.startswith("/jwks"):
                    self._send(provider.jwks())
                else:
                    self._send(b"{}", 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                client = (form.get("client_id") or [""])[0]
                auth = self.headers.get("Authorization") or ""
                if auth.startswith("Basic "):
                    client = base64.b64decode(auth[6:]).decode().partition(":")[0]
                if not self.path.startswith("/token") or not client:
                    self._send(b'{"error":"invalid_client"}', 401)
                    return
                provider.tokens_issued += 1
                token = provider.key.token(provider.claims(urllib.parse.unquote(client)))
                body = {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
                self._send(json.dumps(body).encode())

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
