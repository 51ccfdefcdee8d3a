"""What DescribeClientQuotas and AlterClientQuotas share: quota entities on the wire (lists of
(entity type, name or None for the default)) and their entity-config paths."""

from __future__ import annotations

from collections.abc import Iterable

from coordination.errors import KafkaApiError
from coordination.metadata.security import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    entity_path,
    parse_entity_path,
)
from protocol.error_codes import ErrorCode

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

#: quota keys of user and client-id entities and whether they are whole numbers (Kafka's
#: DynamicConfig.User/Client: the byte rates are longs, the others doubles)
QUOTA_KEY_INTEGRAL = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}


class InvalidQuota(KafkaApiError):
    error_code = ErrorCode.INVALID_REQUEST


Entity = dict[str, str | None]


def entity_to_path(components: Iterable[tuple[str, str | None]]) -> str:
    """The entity-config path of a user/client-id entity; raises InvalidQuota."""
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
        raise InvalidQuota("IP quotas (connection_creation_rate) are not supported by Odradek")
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


def path_to_entity(path: str) -> Entity | None:
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
