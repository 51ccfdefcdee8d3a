"""How the command line connects to a secured listener: TLS and SASL (PLAIN, SCRAM-SHA-256/512),
configured as Kafka's tools are, with ``--command-config`` (a Kafka client properties file:
``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.truststore.location``
with ``ssl.truststore.type=PEM``, ``ssl.keystore.location`` with ``ssl.keystore.type=PEM``,
``ssl.key.password``, ``ssl.endpoint.identification.algorithm``; librdkafka's
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``, ``sasl.username``,
``sasl.password`` too), or flags, which win over the file."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path

from protocol.scram import MECHANISMS as SCRAM_MECHANISMS

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityConfigError(ValueError):
    """The security settings cannot work (the message says why)."""


def read_properties(text: str) -> dict[str, str]:
    """A Java ``.properties`` file: ``key=value`` or ``key: value``, ``#``/``!`` comments,
    lines continued with a trailing backslash."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", line)
        if match:
            props[match.group(1)] = match.group(2).replace("\\n", "\n")
    return props


@dataclass(frozen=True)
class Security:
    """A listener's security as a client needs it."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def security_from(
    properties: dict[str, str],
    *,
    protocol: str | None = None,
    mechanism: str | None = None,
    username: str | None = None,
    password: str | None = None,
    cafile: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
) -> Security:
    """The settings of a properties file, with flags winning. Raises SecurityConfigError."""
    p = properties
    protocol = (protocol or p.get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(f"security.protocol {protocol} is not one of {PROTOCOLS}")
    context = None
    check_hostname = p.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    if protocol.endswith("SSL"):
        ca = cafile or p.get("ssl.ca.location") or p.get("ssl.truststore.location")
        cert = certfile or p.get("ssl.certificate.location") or p.get("ssl.keystore.location")
        key = keyfile or p.get("ssl.key.location")
        for name in ("ssl.truststore.type", "ssl.keystore.type"):
            if p.get(name, "PEM").upper() != "PEM":
                raise SecurityConfigError(
                    f"{name}={p[name]}: the command line reads PEM files only"
                )
        context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        context.check_hostname = check_hostname
        if not check_hostname and not ca:
            context.verify_mode = ssl.CERT_NONE
        if cert:
            try:
                context.load_cert_chain(cert, key, password=p.get("ssl.key.password"))
            except (OSError, ssl.SSLError) as e:
                raise SecurityConfigError(f"cannot load {cert}: {e}") from None
    if not protocol.startswith("SASL_"):
        return Security(protocol, ssl_context=context, check_hostname=check_hostname)
    mechanism = (mechanism or p.get("sasl.mechanism") or "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise SecurityConfigError(f"sasl.mechanism {mechanism} is not one of {MECHANISMS}")
    jaas = dict(_JAAS_OPTION.findall(p.get("sasl.jaas.config", "")))
    username = username or p.get("sasl.username") or jaas.get("username")
    password = password or p.get("sasl.password") or jaas.get("password")
    if not username or password is None:
        raise SecurityConfigError(
            f"SASL/{mechanism} needs a username and a password (sasl.jaas.config, or "
            "--sasl-username and --sasl-password)"
        )
    return Security(protocol, mechanism, username, password, context, check_hostname)


def load_command_config(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        return read_properties(Path(path).read_text())
    except OSError as e:
        raise SecurityConfigError(f"cannot read {path}: {e.strerror or e}") from None
