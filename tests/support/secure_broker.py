"""A broker with every kind of listener, and the client settings each real client uses against
it, as a Kafka user would write them.

Listeners of :func:`secure_settings`:

===============  ==============  =================================================================
name             protocol        what
===============  ==============  =================================================================
PLAINTEXT        PLAINTEXT       admin work in the tests (no authentication)
SSL              SSL             server authentication (PEM files)
MTLS             SSL             mutual TLS (``ssl.client.auth=required``), principal from the DN
SASL_PLAINTEXT   SASL_PLAINTEXT  PLAIN (JAAS users), SCRAM-SHA-256, SCRAM-SHA-512
SASL_SSL         SASL_SSL        the same mechanisms over TLS (inline PEM keystore/truststore)
REAUTH           SASL_PLAINTEXT  PLAIN with ``connections.max.reauth.ms`` (KIP-368)
===============  ==============  =================================================================
"""

from __future__ import annotations

import ssl
from typing import Any

from tests.support.certs import TlsFiles

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
REAUTH_MS = 2000


def plain_jaas(users: dict[str, str] = PASSWORDS) -> str:
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="admin-secret" {options};'
    )


def secure_settings(tls: TlsFiles, **extra: str) -> dict[str, str]:
    settings = {
        "listeners": ",".join(
            f"{name}://127.0.0.1:0"
            for name in ("PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL", "REAUTH")
        ),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        # file-based PEM keystore and truststore (SSL, MTLS)
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        # inline PEM on SASL_SSL
        "listener.name.sasl_ssl.ssl.keystore.location": "",
        "listener.name.sasl_ssl.ssl.keystore.certificate.chain": tls.server_chain_pem,
        "listener.name.sasl_ssl.ssl.keystore.key": tls.server_key_pem,
        "listener.name.sasl_ssl.ssl.truststore.location": "",
        "listener.name.sasl_ssl.ssl.truststore.certificates": tls.ca_pem,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(),
        "listener.name.reauth.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.reauth.plain.sasl.jaas.config": plain_jaas(),
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
    }
    settings.update(extra)
    return settings


#: the test modes: (listener, SASL mechanism or None, client certificate)
MODES = {
    "SSL": ("SSL", None, False),
    "MTLS": ("MTLS", None, True),
    "SASL_PLAIN": ("SASL_PLAINTEXT", "PLAIN", False),
    "SCRAM-SHA-256": ("SASL_PLAINTEXT", "SCRAM-SHA-256", False),
    "SCRAM-SHA-512": ("SASL_PLAINTEXT", "SCRAM-SHA-512", False),
    "SASL_SSL": ("SASL_SSL", "SCRAM-SHA-512", False),
}
PROTOCOLS = {
    "SSL": "SSL",
    "MTLS": "SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
    "REAUTH": "SASL_PLAINTEXT",
}


def librdkafka_config(
    mode: str, tls: TlsFiles, *, user: str = "alice", password: str | None = None
) -> dict[str, Any]:
    """confluent-kafka and kcat (librdkafka) settings for ``mode``."""
    listener, mechanism, client_cert = MODES[mode]
    protocol = PROTOCOLS[listener]
    conf: dict[str, Any] = {"security.protocol": protocol}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(tls.ca)
    if client_cert:
        conf["ssl.certificate.location"] = str(tls.client_cert)
        conf["ssl.key.location"] = str(tls.client_key)
    if mechanism:
        conf["sasl.mechanism"] = mechanism
        conf["sasl.username"] = user
        conf["sasl.password"] = password if password is not None else PASSWORDS[user]
    return conf


def kafka_python_config(mode: str, tls: TlsFiles, *, user: str = "alice") -> dict[str, Any]:
    listener, mechanism, client_cert = MODES[mode]
    protocol = PROTOCOLS[listener]
    conf: dict[str, Any] = {"security_protocol": protocol}
    if "SSL" in protocol:
        conf["ssl_cafile"] = str(tls.ca)
    if client_cert:
        conf["ssl_certfile"] = str(tls.client_cert)
        conf["ssl_keyfile"] = str(tls.client_key)
    if mechanism:
        conf["sasl_mechanism"] = mechanism
        conf["sasl_plain_username"] = user
        conf["sasl_plain_password"] = PASSWORDS[user]
    return conf


def aiokafka_config(mode: str, tls: TlsFiles, *, user: str = "alice") -> dict[str, Any]:
    listener, mechanism, client_cert = MODES[mode]
    protocol = PROTOCOLS[listener]
    conf: dict[str, Any] = {"security_protocol": protocol}
    if "SSL" in protocol:
        ctx = ssl.create_default_context(cafile=str(tls.ca))
        if client_cert:
            ctx.load_cert_chain(str(tls.client_cert), str(tls.client_key))
        conf["ssl_context"] = ctx
    if mechanism:
        conf["sasl_mechanism"] = mechanism
        conf["sasl_plain_username"] = user
        conf["sasl_plain_password"] = PASSWORDS[user]
    return conf


def kcat_args(mode: str, tls: TlsFiles) -> list[str]:
    args = []
    for key, value in librdkafka_config(mode, tls).items():
        args += ["-X", f"{key}={value}"]
    return args
