"""What the security features give the rest of the broker, built once by the composition root
(:mod:`broker.server`): the security store, the audit trail, SCRAM credentials, the SASL
settings of each SASL listener, client quotas, the authorizer (None without
``authorizer.class.name``) and delegation tokens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.security.audit import SecurityAudit
from broker.security.authorizer import AclAuthorizer
from broker.security.delegation_tokens import DelegationTokens
from broker.security.quotas import QuotaManagers
from broker.security.sasl import ListenerSasl, ScramCredentialCache
from coordination.metadata.security import SecurityStore


@dataclass(frozen=True)
class SecurityServices:
    store: SecurityStore
    audit: SecurityAudit = field(default_factory=SecurityAudit)
    scram: ScramCredentialCache = field(default_factory=ScramCredentialCache)
    quotas: QuotaManagers = field(default_factory=QuotaManagers)
    #: SASL settings by listener name (SASL_PLAINTEXT and SASL_SSL listeners only)
    sasl: Mapping[str, ListenerSasl] = field(default_factory=dict)
    authorizer: AclAuthorizer | None = None
    #: delegation tokens (KIP-48; disabled without ``delegation.token.secret.key``)
    tokens: DelegationTokens | None = None
