"""The security audit trail: who authenticated (or failed to), who was denied what, from where.

Every event is one log line on the ``broker.security.audit`` logger, with the principal (or the
user name tried), the listener and the client's address, and is counted in a metric:

* ``odradek_authentication_total{listener,mechanism,result}`` (result: success, failure);
* ``odradek_tls_handshake_failures_total{listener}`` (a plaintext client on a TLS port, an
  unknown or expired client certificate, garbage);
* ``odradek_authorization_denied_total{operation,resource_type}``.

Successes are logged at INFO, failures and denials at WARNING/INFO. Passwords, tokens and
credentials are never logged: only user names, mechanisms and reasons written here.

Thread-safety: called from every processor thread; counters are kept under a lock (these events
are rare next to requests).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from broker.metrics import MetricSamples
from broker.net.session import KafkaPrincipal, Session
from broker.net.transport import tls_error_reason

log = logging.getLogger("broker.security.audit")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class SecurityAudit:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._auth: dict[tuple[str, str, str], int] = {}
        self._tls: dict[str, int] = {}
        self._denied: dict[tuple[str, str], int] = {}

    def _count(self, table: dict, key: object) -> None:  # type: ignore[type-arg]
        with self._lock:
            table[key] = table.get(key, 0) + 1

    def authenticated(
        self, session: Session, mechanism: str, *, reauthentication: bool = False
    ) -> None:
        self._count(self._auth, (session.listener, mechanism, "success"))
        log.info(
            "%s succeeded: principal %s from %s on listener %s (SASL %s%s)",
            "re-authentication" if reauthentication else "authentication",
            session.principal,
            session.client_host,
            session.listener,
            mechanism,
            ", delegation token" if session.token_authenticated else "",
        )

    def tls_authenticated(self, session: Session) -> None:
        self._count(self._auth, (session.listener, "SSL", "success"))
        log.info(
            "TLS client authenticated: principal %s from %s on listener %s",
            session.principal,
            session.client_host,
            session.listener,
        )

    def authentication_failed(
        self, session: Session, mechanism: str, user: str | None, reason: str
    ) -> None:
        self._count(self._auth, (session.listener, mechanism or "-", "failure"))
        log.warning(
            "authentication failed: user %s from %s:%d on listener %s (SASL %s): %s",
            user if user is not None else "(unknown)",
            session.client_host,
            session.peer[1],
            session.listener,
            mechanism or "-",
            reason,
        )

    def tls_handshake_failed(self, session: Session, error: Exception) -> None:
        with self._lock:
            self._tls[session.listener] = self._tls.get(session.listener, 0) + 1
        reason = tls_error_reason(error)
        log.warning(
            "TLS handshake failed: client %s:%d on listener %s: %s",
            session.client_host,
            session.peer[1],
            session.listener,
            reason,
        )

    def denied(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: str,
        resource_type: str,
        resource_name: str,
        api: str,
    ) -> None:
        self._count(self._denied, (operation, resource_type))
        log.info(
            "Principal = %s is Denied Operation = %s from host = %s on resource = %s:LITERAL:%s "
            "for request = %s",
            principal,
            operation,
            host,
            resource_type,
            resource_name,
            api,
        )

    def samples(self) -> Iterable[MetricSamples]:
        with self._lock:
            auth = sorted(self._auth.items())
            tls = sorted(self._tls.items())
            denied = sorted(self._denied.items())
        return [
            (
                "odradek_authentication_total",
                "counter",
                "Authentications by listener, mechanism (SSL: a client certificate) and result.",
                [
                    (
                        f'{{listener="{_label(li)}",mechanism="{_label(m)}",result="{r}"}}',
                        float(n),
                    )
                    for (li, m, r), n in auth
                ],
            ),
            (
                "odradek_tls_handshake_failures_total",
                "counter",
                "TLS handshakes that failed, by listener.",
                [(f'{{listener="{_label(li)}"}}', float(n)) for li, n in tls],
            ),
            (
                "odradek_authorization_denied_total",
                "counter",
                "Operations the authorizer denied, by operation and resource type.",
                [
                    (f'{{operation="{op}",resource_type="{rt}"}}', float(n))
                    for (op, rt), n in denied
                ],
            ),
        ]
