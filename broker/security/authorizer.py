"""The authorization seam (Kafka's ``org.apache.kafka.server.authorizer.Authorizer``).

Every request handler declares the ACL operation and resource type it needs
(:func:`broker.registry.handler`); the dispatcher checks requirements on the CLUSTER resource
before the handler runs, and handlers ask :meth:`~broker.dispatch.RequestContext.authorize` for
each topic, group or transactional id a request names, answering TOPIC_AUTHORIZATION_FAILED and
its kin per resource, as Kafka's ``KafkaApis`` does.

With no ``authorizer.class.name`` configured (the default, as in Kafka) there is no authorizer
and every operation is allowed; the ACL authorizer of the security work plugs in here.

Thread-safety: ``authorize`` is called from every processor thread at once.
"""

from __future__ import annotations

from typing import Protocol

from broker.net.session import KafkaPrincipal
from protocol.acl import AclOperation, ResourceType


class Authorizer(Protocol):
    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on the resource."""
        ...
