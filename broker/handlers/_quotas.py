"""What DescribeClientQuotas and AlterClientQuotas share: quota entities on the wire (lists of
(entity type, name or None for the default)), their entity-config paths and the quota keys each
kind of entity takes."""

from __future__ import annotations

from collections.abc import Iterable

from broker.addresses import addresses_of
from coordination.errors import KafkaApiError
from coordination.metadata.security import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    IP_CONNECTION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    entity_path,
    ip_entity_path,
    parse_entity_path,
    parse_ip_entity_path,
)
from protocol.error_codes import ErrorCode

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

#: quota keys of user and client-id entities and their types (Kafka's DynamicConfig.User and
#: Client: the byte rates are longs, the others doubles)
USER_QUOTA_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
#: the quota key of ip entities and its type (Kafka's DynamicConfig.Ip)
IP_QUOTA_KEYS = {IP_CONNECTION_RATE: "INT"}


class InvalidQuota(KafkaApiError):
    error_code = ErrorCode.INVALID_REQUEST


Entity = dict[str, str | None]


def entity_to_path(components: Iterable[tuple[str, str | None]]) -> str:
    """The entity-config path of a user/client-id or ip entity; raises InvalidQuota."""
    entity: Entity = {}
    for entity_type, name in components:
        if entity_type in entity:
            raise InvalidQuota(f"Duplicate {entity_type} entity type in the quota entity")
        if name == "":
            # Kafka's parseAndSanitizeQuotaEntity (None names the default entity)
            raise InvalidQuota(f"Empty {entity_type} not supported")
        entity[entity_type] = name
    if IP in entity:
        if len(entity) > 1:
            raise InvalidQuota(
                "Invalid quota entity combination, IP entity should not be used with user/"
                "client ID entity."
            )
        ip = entity[IP]
        if ip is not None and not _resolvable(ip):
            raise InvalidQuota(f"{ip} is not a valid IP or resolvable host.")
        return ip_entity_path(ip)
    unknown = set(entity) - {USER, CLIENT_ID}
    if unknown or not entity:
        raise InvalidQuota(f"Invalid client quota entity: {sorted(unknown) or 'empty'}")
    user = entity.get(USER, "")
    client = entity.get(CLIENT_ID, "")
    return entity_path(
        user=user if USER in entity and user is not None else None,
        client_id=client if CLIENT_ID in entity and client is not None else None,
        default_user=USER in entity and entity[USER] is None,
        default_client=CLIENT_ID in entity and entity[CLIENT_ID] is None,
    )


def quota_keys(path: str) -> dict[str, str]:
    """The quota keys an entity path takes, and their types."""
    return IP_QUOTA_KEYS if parse_ip_entity_path(path) is not None else USER_QUOTA_KEYS


def _resolvable(host: str) -> bool:
    """Kafka's ``isValidIpEntity``: an address, or a host name that resolves
    (``InetAddress.getByName``)."""
    try:
        addresses_of(host)
    except OSError:
        return False
    return True


def path_to_entity(path: str) -> Entity | None:
    ip = parse_ip_entity_path(path)
    if ip is not None:
        return {IP: ip[0]}
    parsed = parse_entity_path(path)
    if parsed is None:
        return None
    user, client, default_user, default_client = parsed
    entity: Entity = {}
    if user is not None or default_user:
        entity[USER] = user
    if client is not None or default_client:
        entity[CLIENT_ID] = client
    return entity
