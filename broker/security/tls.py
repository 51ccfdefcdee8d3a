"""TLS for listeners and inter-broker connections, from Kafka's ``ssl.*`` keys (PEM only).

A listener's keys are read with its ``listener.name.<listener>.`` prefix first
(:meth:`~broker.config.BrokerConfig.for_listener`). Supported, as Kafka's PEM keystores
(KIP-651) define them:

* the broker's key and certificate chain: ``ssl.keystore.location`` (one PEM file holding the
  private key and the chain; ``ssl.key.password`` for an encrypted key), or inline
  ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``;
* trusted CAs: ``ssl.truststore.location`` or inline ``ssl.truststore.certificates`` (with
  neither, the system's CAs);
* ``ssl.client.auth`` (``none``, ``requested``, ``required``), ``ssl.enabled.protocols``
  (TLSv1.2/TLSv1.3), ``ssl.cipher.suites`` (OpenSSL or IANA names of TLS 1.2 suites),
  ``ssl.endpoint.identification.algorithm`` (``https``: host name checks when this broker is
  the client), ``ssl.principal.mapping.rules``.

JKS and PKCS12 keystores are refused at start-up with a message saying how to convert them.
Errors never include key material or passwords.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.config import BrokerConfig, ConfigError
from broker.net.session import KafkaPrincipal, Session
from broker.net.transport import TlsTransport, Transport
from broker.security.principal import SslPrincipalMapper, distinguished_name

_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


def openssl_cipher_name(name: str) -> str:
    """``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` (IANA, what Java lists) ->
    ``ECDHE-RSA-AES256-GCM-SHA384`` (OpenSSL); OpenSSL names pass through."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, _, cipher = name[4:].partition("_WITH_")
    kx_part = "" if kx == "RSA" else kx.replace("_", "-") + "-"
    parts = cipher.split("_")
    if parts[:1] == ["AES"] and len(parts) >= 3:
        bits, mode, *rest = parts[1:]
        if mode == "CBC":
            digest = rest[0] if rest else "SHA"
            return f"{kx_part}AES{bits}-{digest}"
        return f"{kx_part}AES{bits}-{mode}" + (f"-{rest[0]}" if rest else "")
    if parts[:2] == ["CHACHA20", "POLY1305"]:
        return f"{kx_part}CHACHA20-POLY1305"
    return kx_part + "-".join(parts)


def _reason(e: Exception) -> str:
    return str(getattr(e, "reason", None) or getattr(e, "strerror", None) or type(e).__name__)


class _Settings:
    """One listener's (or the inter-broker client's) ssl.* values."""

    def __init__(self, config: BrokerConfig, listener: str | None) -> None:
        self.listener = listener

        def get(key: str) -> Any:
            return config.for_listener(listener, key) if listener else config[key]

        self.get = get

    def where(self, key: str) -> str:
        return f"listener.name.{self.listener.lower()}.{key}" if self.listener else key


def _check_type(s: _Settings, type_key: str, location_key: str) -> None:
    kind = str(s.get(type_key) or "PEM").upper()
    location = s.get(location_key)
    if kind == "PEM":
        return
    if location and kind == "JKS":
        # Kafka's default type is JKS: accept a PEM file given without ssl.*.type=PEM
        try:
            with open(location, "rb") as f:
                if b"-----BEGIN" in f.read(4096):
                    return
        except OSError as e:
            raise ConfigError(
                f"{s.where(location_key)}: cannot read {location}: {e.strerror}"
            ) from None
    if location or kind not in ("JKS",):
        raise ConfigError(
            f"{s.where(type_key)}={kind} is not supported: Odradek reads PEM keystores and "
            f"truststores (convert with `keytool -importkeystore -deststoretype PKCS12` and "
            f"`openssl pkcs12 -nodes`, then set {type_key}=PEM)"
        )


def _load_identity(ctx: ssl.SSLContext, s: _Settings, *, required: bool) -> None:
    location = s.get("ssl.keystore.location")
    chain = s.get("ssl.keystore.certificate.chain")
    key = s.get("ssl.keystore.key")
    password = s.get("ssl.key.password") or s.get("ssl.keystore.password") or None
    if location:
        _check_type(s, "ssl.keystore.type", "ssl.keystore.location")
        try:
            ctx.load_cert_chain(str(location), password=password)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(
                f"{s.where('ssl.keystore.location')}: cannot load the key and certificate "
                f"chain from {location}: {_reason(e)}"
            ) from None
        return
    if chain or key:
        if not (chain and key):
            raise ConfigError(
                f"{s.where('ssl.keystore.certificate.chain')} and {s.where('ssl.keystore.key')} "
                "must be set together"
            )
        # Python's ssl loads keys from files only: a private temporary file, removed at once
        with tempfile.TemporaryDirectory(prefix="odradek-tls-") as tmp:
            path = Path(tmp) / "keystore.pem"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(str(key).strip() + "\n" + str(chain).strip() + "\n")
            try:
                ctx.load_cert_chain(str(path), password=password)
            except (OSError, ssl.SSLError) as e:
                raise ConfigError(
                    f"{s.where('ssl.keystore.key')}/{s.where('ssl.keystore.certificate.chain')}: "
                    f"cannot load the key and certificate chain: "
                    f"{getattr(e, 'reason', None) or type(e).__name__}"
                ) from None
        return
    if required:
        raise ConfigError(
            f"listener {s.listener} uses TLS but has no key: set "
            f"{s.where('ssl.keystore.location')} (PEM) or "
            f"{s.where('ssl.keystore.certificate.chain')} and {s.where('ssl.keystore.key')}"
        )


def _load_trust(ctx: ssl.SSLContext, s: _Settings, purpose: ssl.Purpose) -> None:
    location = s.get("ssl.truststore.location")
    inline = s.get("ssl.truststore.certificates")
    try:
        if location:
            _check_type(s, "ssl.truststore.type", "ssl.truststore.location")
            ctx.load_verify_locations(cafile=str(location))
        elif inline:
            ctx.load_verify_locations(cadata=str(inline))
        else:
            ctx.load_default_certs(purpose)
    except (OSError, ssl.SSLError) as e:
        where = s.where("ssl.truststore.location" if location else "ssl.truststore.certificates")
        raise ConfigError(
            f"{where}: cannot load trusted certificates: "
            f"{getattr(e, 'reason', None) or getattr(e, 'strerror', None) or type(e).__name__}"
        ) from None


def _versions_and_ciphers(ctx: ssl.SSLContext, s: _Settings) -> None:
    enabled = [str(v) for v in (s.get("ssl.enabled.protocols") or [])]
    unknown = [v for v in enabled if v not in _VERSIONS]
    if unknown or not enabled:
        raise ConfigError(
            f"{s.where('ssl.enabled.protocols')}: {', '.join(unknown) or 'empty'} "
            f"(expected some of {', '.join(_VERSIONS)})"
        )
    versions = sorted(_VERSIONS[v] for v in enabled)
    try:
        ctx.minimum_version = versions[0]
        ctx.maximum_version = versions[-1]
    except ValueError as e:
        raise ConfigError(f"{s.where('ssl.enabled.protocols')}: {e}") from None
    suites = [openssl_cipher_name(str(c)) for c in (s.get("ssl.cipher.suites") or [])]
    tls12 = [c for c in suites if not c.startswith("TLS_")]  # TLS 1.3 suites stay OpenSSL's
    if tls12:
        try:
            ctx.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise ConfigError(
                f"{s.where('ssl.cipher.suites')}: no usable cipher suite in {', '.join(suites)}"
            ) from None


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The SSLContext a TLS listener accepts connections with; raises ConfigError."""
    s = _Settings(config, listener)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions_and_ciphers(ctx, s)
    _load_identity(ctx, s, required=True)
    auth = str(s.get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(
            f"{s.where('ssl.client.auth')}={auth}: expected none, requested or required"
        )
    ctx.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_trust(ctx, s, ssl.Purpose.CLIENT_AUTH)
    return ctx


def client_context(config: BrokerConfig, listener: str | None = None) -> ssl.SSLContext:
    """The SSLContext this broker connects to another broker's TLS listener with (its own
    certificate when it has one: mutual TLS)."""
    s = _Settings(config, listener)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions_and_ciphers(ctx, s)
    ctx.check_hostname = (
        str(s.get("ssl.endpoint.identification.algorithm") or "").lower() == "https"
    )
    ctx.verify_mode = ssl.CERT_REQUIRED
    _load_trust(ctx, s, ssl.Purpose.SERVER_AUTH)
    _load_identity(ctx, s, required=False)
    return ctx


def tls_transport_factory(
    config: BrokerConfig,
    listener: str,
    *,
    set_principal: bool,
    on_handshake_failure: Callable[[Session, Exception], None],
    on_client_certificate: Callable[[Session], None] | None = None,
) -> Callable[[Any, Session], Transport]:
    """The transports of a TLS listener: on an ``SSL`` listener (``set_principal``) the
    session's principal becomes the client certificate's mapped name (``User:ANONYMOUS``
    without one, as Kafka does); on ``SASL_SSL`` the SASL exchange names it."""
    ctx = server_context(config, listener)
    mapper = SslPrincipalMapper(str(config.for_listener(listener, "ssl.principal.mapping.rules")))

    def make(sock: Any, session: Session) -> Transport:
        def handshake(sslsock: ssl.SSLSocket) -> None:
            if set_principal:
                cert = sslsock.getpeercert()
                if cert:
                    session.principal = KafkaPrincipal(
                        "User", mapper.name(distinguished_name(cert))
                    )
                    if on_client_certificate is not None:
                        on_client_certificate(session)

        return TlsTransport(
            sock,
            ctx,
            on_handshake=handshake,
            on_failure=lambda e: on_handshake_failure(session, e),
        )

    return make
