"""AlterClientQuotas: set or remove quota keys of user/client-id entities and of ip entities
(KIP-546, KIP-612; ALTER_CONFIGS on the cluster), stored as Kafka stores them
(``/config/users/<user>``, ``/config/clients/<client-id>``,
``/config/users/<user>/clients/<client-id>``, ``/config/ips/<ip>``, ``<default>`` for a
default entity) with a change notification, so every broker applies them at once."""

from __future__ import annotations

from broker.config import INT_MAX, LONG_MAX
from broker.dispatch import RequestContext
from broker.handlers._quotas import InvalidQuota, entity_to_path, quota_keys
from broker.registry import error_response, handler
from coordination.metadata.security import SecurityStoreError
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    QuotaAlteration,
    QuotaAlterationResult,
    QuotaEntityComponent,
)


def _value(keys: dict[str, str], key: str, value: float) -> str:
    """The stored text of a quota value, checked as Kafka's ZooKeeper-mode ZkAdminManager
    checks it: a LONG or INT must convert to a whole number and back unchanged, so a fraction,
    a negative number (its conversion truncates toward zero) or too large a one is refused."""
    kind = keys.get(key)
    if kind is None:
        raise InvalidQuota(f"Invalid configuration key {key}")
    if kind == "DOUBLE":
        return repr(float(value))
    rounded = round(value)
    top = INT_MAX if kind == "INT" else LONG_MAX
    if abs(rounded - value) > 1e-6 or not 0 <= rounded <= top:
        if kind == "INT":
            raise InvalidQuota(f"Configuration {key} must be a INT value")
        raise InvalidQuota(f"Configuration {key} must be a Long value of at least 0")
    return str(rounded)


def _alter(ctx: RequestContext, entry: QuotaAlteration, validate_only: bool) -> None:
    security = ctx.services.security
    assert security is not None
    path = entity_to_path((c.entity_type, c.entity_name) for c in entry.entity)
    keys = quota_keys(path)
    sets: dict[str, str] = {}
    removes: list[str] = []
    for op in entry.ops:
        if op.remove:
            if op.key not in keys:
                raise InvalidQuota(f"Invalid configuration key {op.key}")
            removes.append(op.key)
        else:
            sets[op.key] = _value(keys, op.key, op.value)
    if validate_only:
        return

    def change(configs: dict[str, str]) -> dict[str, str]:
        for key in removes:
            configs.pop(key, None)
        configs.update(sets)
        return configs

    try:
        security.store.alter_entity_configs(path, change)
    except SecurityStoreError as e:
        raise InvalidQuota(str(e), ErrorCode.UNKNOWN_SERVER_ERROR) from None


@handler(
    ApiKey.ALTER_CLIENT_QUOTAS,
    "0-1",
    acl=(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER),
    blocking=True,
)
def handle_alter_client_quotas(
    ctx: RequestContext, request: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    results = []
    for entry in request.entries:
        code, message = ErrorCode.NONE, None
        try:
            _alter(ctx, entry, request.validate_only)
        except InvalidQuota as e:
            code, message = e.error_code, str(e)
        results.append(
            QuotaAlterationResult(
                error_code=code,
                error_message=message,
                entity=[
                    QuotaEntityComponent(entity_type=c.entity_type, entity_name=c.entity_name)
                    for c in entry.entity
                ],
            )
        )
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=results)


@error_response(ApiKey.ALTER_CLIENT_QUOTAS)
def alter_client_quotas_error(
    request: AlterClientQuotasRequest, code: ErrorCode, message: str | None
) -> AlterClientQuotasResponse:
    return AlterClientQuotasResponse(
        entries=[
            QuotaAlterationResult(
                error_code=code,
                error_message=message,
                entity=[
                    QuotaEntityComponent(entity_type=c.entity_type, entity_name=c.entity_name)
                    for c in e.entity
                ],
            )
            for e in request.entries
        ]
    )
