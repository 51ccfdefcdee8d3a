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
  (TLSv1.2/TLSv1.3), ``ssl.cipher.suites`` (OpenSSL or IANA names; a version is served only if
  the list has one of its suites, as with Java; TLS 1.3 suites all or none),
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
        self._overridden = (
            set(config.listener_values.get(listener.upper(), {})) if listener else set()
        )

        def get(key: str) -> Any:
            return config.for_listener(listener, key) if listener else config[key]

        self.get = get

    def where(self, key: str) -> str:
        """The key that gives this listener its value: the listener's own
        (``listener.name.<listener>.<key>``) when set, else the broker's."""
        if self.listener and key in self._overridden:
            return f"listener.name.{self.listener.lower()}.{key}"
        return key


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


class _NoKeyPassword(Exception):
    """The private key is encrypted and no password is configured."""


def _no_password() -> str:
    # without a password callback OpenSSL would prompt on the terminal
    raise _NoKeyPassword


def _load_key_and_chain(
    ctx: ssl.SSLContext, path: str, password: str | None, where: str, what: str
) -> None:
    """Loads the PEM key and chain at ``path``; ``where`` names the keys in errors, ``what``
    the place the key comes from."""
    try:
        ctx.load_cert_chain(path, password=password if password else _no_password)
    except _NoKeyPassword:
        raise ConfigError(
            f"{where}: the private key {what} is encrypted: set ssl.key.password"
        ) from None
    except (OSError, ssl.SSLError) as e:
        encrypted = False
        try:
            with open(path, "rb") as f:
                encrypted = b"ENCRYPTED" in f.read()
        except OSError:
            pass
        if encrypted and password:
            reason = "cannot decrypt the private key with ssl.key.password (a wrong password?)"
        else:
            reason = f"cannot load the key and certificate chain {what}: {_reason(e)}"
        raise ConfigError(f"{where}: {reason}") from None


def _load_identity(ctx: ssl.SSLContext, s: _Settings, *, required: bool) -> None:
    location = s.get("ssl.keystore.location")
    chain = s.get("ssl.keystore.certificate.chain")
    key = s.get("ssl.keystore.key")
    password = s.get("ssl.key.password") or s.get("ssl.keystore.password") or None
    if location:
        _check_type(s, "ssl.keystore.type", "ssl.keystore.location")
        _load_key_and_chain(
            ctx,
            str(location),
            password,
            s.where("ssl.keystore.location"),
            f"in {location}",
        )
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
            _load_key_and_chain(
                ctx,
                str(path),
                password,
                f"{s.where('ssl.keystore.key')}/{s.where('ssl.keystore.certificate.chain')}",
                "given inline",
            )
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


def _tls13_suites() -> frozenset[str]:
    """The TLS 1.3 suites Python's ssl module enables (OpenSSL's defaults; it offers no way to
    choose among them)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    return frozenset(c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.3")


#: every TLS 1.3 suite name (RFC 8446), whether OpenSSL enables it or not
_TLS13_NAMES = frozenset(
    {
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
        "TLS_AES_128_CCM_8_SHA256",
    }
)


def _versions_and_ciphers(ctx: ssl.SSLContext, s: _Settings) -> None:
    """``ssl.enabled.protocols`` and ``ssl.cipher.suites``, as Java's JSSE applies them to
    Kafka's SSLEngine: a version is negotiated only if one of its suites is enabled, so a suite
    list without TLS 1.3 suites turns TLS 1.3 off, and one with only TLS 1.3 suites turns TLS 1.2
    off. Python's ssl module cannot choose among TLS 1.3 suites: a list naming some but not all
    of OpenSSL's is refused rather than served with more than it allows."""
    enabled = [str(v) for v in (s.get("ssl.enabled.protocols") or [])]
    unknown = [v for v in enabled if v not in _VERSIONS]
    if unknown or not enabled:
        raise ConfigError(
            f"{s.where('ssl.enabled.protocols')}: {', '.join(unknown) or 'empty'} "
            f"(expected some of {', '.join(_VERSIONS)})"
        )
    versions = sorted(_VERSIONS[v] for v in enabled)
    suites = [str(c).strip() for c in (s.get("ssl.cipher.suites") or []) if str(c).strip()]
    tls13 = [c for c in suites if c in _TLS13_NAMES]
    tls12 = [openssl_cipher_name(c) for c in suites if c not in _TLS13_NAMES]
    if suites:
        where = s.where("ssl.cipher.suites")
        unusable = []
        for name in tls12:
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(name)
            except ssl.SSLError:
                unusable.append(name)
        if unusable:
            raise ConfigError(
                f"{where}: unknown or unavailable cipher suite(s) {', '.join(unusable)} "
                "(Kafka's IANA names, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, or OpenSSL's)"
            )
        offered = _tls13_suites()
        if tls13 and set(tls13) != offered:
            raise ConfigError(
                f"{where}: names the TLS 1.3 suite(s) {', '.join(sorted(tls13))}, but Odradek "
                f"serves TLS 1.3 with all of {', '.join(sorted(offered))} (Python's ssl module "
                "cannot choose among them): list all of them, or none and leave TLSv1.3 out"
            )
        if not tls13:
            versions = [v for v in versions if v < ssl.TLSVersion.TLSv1_3]
        if not tls12:
            versions = [v for v in versions if v >= ssl.TLSVersion.TLSv1_3]
        if not versions:
            raise ConfigError(
                f"{where}: no suite for the versions of {s.where('ssl.enabled.protocols')} "
                f"({', '.join(enabled)}): TLS 1.3 suites are "
                f"{', '.join(sorted(offered))}; the others are TLS 1.2 suites"
            )
    try:
        ctx.minimum_version = versions[0]
        ctx.maximum_version = versions[-1]
    except ValueError as e:
        raise ConfigError(f"{s.where('ssl.enabled.protocols')}: {e}") from None
    if tls12:
        ctx.set_ciphers(":".join(tls12))


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
