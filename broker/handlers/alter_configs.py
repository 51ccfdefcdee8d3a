"""AlterConfigs (replace a resource's whole config) and IncrementalAlterConfigs (SET, DELETE,
APPEND, SUBTRACT per key) on topics, brokers, broker loggers, client metrics subscriptions and
groups.

Both, as Kafka's ``ConfigAdminManager.preprocess`` does, first refuse with INVALID_REQUEST a
resource named twice, a key given twice and a key without a value (but in a DELETE); AlterConfigs
also BROKER_LOGGER resources (IncrementalAlterConfigs only, KIP-412).

* TOPIC: the topic's overrides, checked and stored in the metadata store.
* BROKER: dynamic broker configs (:mod:`broker.dynamic_config`): the resource name ``""`` is the
  cluster-wide default (entity ``<default>``), this broker's id its own configs. Only keys Kafka
  marks dynamic are accepted; a read-only key answers INVALID_REQUEST naming it (Kafka's
  "Cannot update these configs dynamically"). Another broker's id answers INVALID_REQUEST: send
  it to that broker, as Kafka's admin client does.
* BROKER_LOGGER: logger levels of this broker (:mod:`broker.loggers`), not persisted
  (IncrementalAlterConfigs only).
* CLIENT_METRICS: a client telemetry subscription (KIP-714: ``metrics``, ``interval.ms``,
  ``match``; :mod:`broker.telemetry`), checked as Kafka checks it and kept by the metadata store
  (in ZooKeeper under ``/config/client-metrics``); removing every key removes the subscription.
  ALTER_CONFIGS on the cluster is needed.
* GROUP: a group's own configs (KIP-848: :mod:`broker.group_configs`), for any group id, kept by
  the metadata store (in ZooKeeper under ``/config/groups``). ALTER_CONFIGS on the group.
"""

from __future__ import annotations

from collections.abc import Callable

from broker import loggers
from broker.config import (
    BROKER_CONFIGS,
    REPLICATION_THROTTLE_CONFIGS,
    TOPIC_CONFIGS,
    ConfigError,
    dynamic_listener_key,
    format_value,
    validate_dynamic_broker_configs,
)
from broker.config_describe import ConfigResourceType
from broker.dispatch import AuthorizationFailed, RequestContext
from broker.dynamic_config import values_in_force
from broker.group_configs import check_group_key, validate_group_configs
from broker.registry import error_response, handler
from broker.telemetry import CONFIG_NAMES as CLIENT_METRICS_CONFIGS
from broker.telemetry import parse_subscription
from coordination.errors import InvalidConfig, InvalidRequest, KafkaApiError, UnknownTopic
from coordination.metadata.view import DEFAULT_BROKER_ENTITY
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import alter_configs as ac
from protocol.messages import incremental_alter_configs as iac
from protocol.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from protocol.schema import Struct

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _alter(
    ctx: RequestContext,
    resource: Struct,
    validate_only: bool,
    new_configs: Callable[[dict[str, str]], dict[str, str]],
) -> tuple[ErrorCode, str | None]:
    broker = ctx.services
    try:
        if resource.resource_type == ConfigResourceType.TOPIC:
            ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, resource.resource_name)
            topic = broker.metadata.view.topics.get(resource.resource_name)
            if topic is None:
                raise UnknownTopic(f"Topic {resource.resource_name} does not exist.")
            configs = new_configs(dict(topic.configs))
            broker.admin.check_configs(configs)
            if not validate_only:
                broker.admin.set_topic_configs(topic.name, configs)
        elif resource.resource_type == ConfigResourceType.BROKER:
            ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
            entity = broker_entity(ctx, resource.resource_name)
            current = dict(broker.metadata.view.broker_configs.get(entity, {}))
            configs = new_configs(current)
            try:
                in_force = values_in_force(
                    broker.config, broker.metadata.view, broker.broker_id, entity
                )
                validate_dynamic_broker_configs(
                    configs, per_broker=entity != DEFAULT_BROKER_ENTITY, current=in_force
                )
            except ConfigError as e:
                raise InvalidRequest(str(e)) from None
            if not validate_only:
                broker.metadata.set_broker_configs(entity, configs)
        elif resource.resource_type == ConfigResourceType.BROKER_LOGGER:
            ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
            broker_entity(ctx, resource.resource_name, allow_default=False)
            alter_loggers(new_configs, validate_only)
        elif resource.resource_type == ConfigResourceType.CLIENT_METRICS:
            ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
            name = resource.resource_name
            current = dict(broker.metadata.view.client_metrics.get(name, {}))
            configs = new_configs(current)
            parse_subscription(name, configs)
            if not validate_only:
                broker.metadata.set_client_metrics_configs(name, configs)
        elif resource.resource_type == ConfigResourceType.GROUP:
            name = resource.resource_name
            if not name:
                raise InvalidRequest("Default group resources are not allowed.")
            ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name)
            configs = new_configs(dict(broker.metadata.view.group_configs.get(name, {})))
            validate_group_configs(broker.config, configs)
            if not validate_only:
                broker.metadata.set_group_configs(name, configs)
        else:
            raise InvalidRequest(f"Unsupported resource type {resource.resource_type}")
    except AuthorizationFailed as e:
        return e.error_code, None  # Kafka's configsAuthorizationApiError has no message
    except KafkaApiError as e:
        return e.error_code, str(e)
    return ErrorCode.NONE, None


def broker_entity(ctx: RequestContext, name: str, *, allow_default: bool = True) -> str:
    """The dynamic config entity a BROKER resource names: ``<default>`` for ``""``, this
    broker's id for itself; INVALID_REQUEST for another broker."""
    if name == "" and allow_default:
        return DEFAULT_BROKER_ENTITY
    if name != str(ctx.services.broker_id):
        raise InvalidRequest(
            f"Unexpected broker id, expected {ctx.services.broker_id}"
            + (" or empty string" if allow_default else "")
            + f", but received {name}"
        )
    return name


def alter_loggers(
    new_configs: Callable[[dict[str, str]], dict[str, str]], validate_only: bool
) -> None:
    current = dict(loggers.describe())
    wanted = new_configs(dict(current))
    try:
        for name, level in wanted.items():
            loggers.check(name, level)
        for name in current:
            if name not in wanted:
                loggers.check(name, None)
        if validate_only:
            return
        for name, level in wanted.items():
            if current.get(name) != level.upper():
                loggers.set_level(name, level)
        for name in current:
            if name not in wanted:
                loggers.reset(name)
    except loggers.InvalidLoggerConfig as e:
        raise InvalidConfig(str(e)) from None


def _refusal(
    resource: Struct, named: list[tuple[int, str]], *, incremental: bool = False
) -> str | None:
    """Why Kafka refuses a resource before looking at its configs, its type or its
    authorization (``ConfigAdminManager.preprocess``: INVALID_REQUEST), or None. A resource
    named twice, a key given twice or without a value (but in a DELETE) would leave the change
    ambiguous; KIP-412 added logger levels to IncrementalAlterConfigs only, so BROKER_LOGGER is
    no resource type of a legacy AlterConfigs."""
    if named.count((resource.resource_type, resource.resource_name)) > 1:
        return "Each resource must appear at most once."
    names = [c.name for c in resource.configs]
    if len(set(names)) != len(names):
        return "Error due to duplicate config keys"
    nulls = [
        c.name
        for c in resource.configs
        if c.value is None and not (incremental and c.config_operation == DELETE)
    ]
    if nulls:
        return "Null value not supported for : " + ", ".join(nulls)
    if incremental:
        return None
    if resource.resource_type == ConfigResourceType.BROKER_LOGGER:
        return (
            "AlterConfigs does not support the resource type BROKER_LOGGER: set logger levels "
            "with IncrementalAlterConfigs"
        )
    return None


@handler(
    ApiKey.ALTER_CONFIGS, "0-2", acl=(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC), blocking=True
)
def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    named = [(res.resource_type, res.resource_name) for res in request.resources]
    for res in request.resources:
        message: str | None = _refusal(res, named)
        if message is not None:
            code = ErrorCode.INVALID_REQUEST
        else:
            # (every value is set: a missing one was refused above)
            replacement = {c.name: c.value for c in res.configs if c.value is not None}

            def replace(_old: dict[str, str], new: dict[str, str] = replacement) -> dict[str, str]:
                return new

            code, message = _alter(ctx, res, request.validate_only, replace)
        responses.append(
            ac.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return ac.AlterConfigsResponse(throttle_time_ms=0, responses=responses)


def _kind(resource_type: int, name: str) -> str:
    """The type of config ``name`` of a resource type (InvalidConfig when unknown)."""
    if resource_type == ConfigResourceType.BROKER_LOGGER:
        return "string"
    if resource_type == ConfigResourceType.GROUP:
        check_group_key(name)
        return "int"
    if resource_type == ConfigResourceType.CLIENT_METRICS:
        if name not in CLIENT_METRICS_CONFIGS:
            raise InvalidRequest(f"Unknown client metrics configuration: {name}")
        return "int" if name == "interval.ms" else "list"
    if resource_type == ConfigResourceType.BROKER:
        if name in REPLICATION_THROTTLE_CONFIGS:
            return "long"
        per_listener = dynamic_listener_key(name)
        if per_listener is not None:
            return BROKER_CONFIGS[per_listener[1]].kind
        broker_key = BROKER_CONFIGS.get(name)
        if broker_key is None:
            raise InvalidConfig(f"Unknown broker config name: {name}")
        return broker_key.kind
    topic_key = TOPIC_CONFIGS.get(name)
    if topic_key is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    return topic_key.kind


def _default(resource_type: int, name: str) -> str:
    """Config ``name``'s default as a string (a list config APPEND/SUBTRACT starts from)."""
    key = (BROKER_CONFIGS if resource_type == ConfigResourceType.BROKER else TOPIC_CONFIGS)[name]
    return format_value(key.kind, key.default) or ""


def _incremental(
    ops: list[Struct], resource_type: int = ConfigResourceType.TOPIC
) -> Callable[[dict[str, str]], dict[str, str]]:
    def apply(configs: dict[str, str]) -> dict[str, str]:
        # (a key given twice, or without a value but in a DELETE, was refused before)
        for op in ops:
            kind = _kind(resource_type, op.name)
            if op.config_operation == SET:
                configs[op.name] = op.value
            elif op.config_operation == DELETE:
                configs.pop(op.name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                if kind != "list":
                    raise InvalidConfig(
                        f"Config value append/subtract is not allowed for config key {op.name}"
                    )
                # an unset list starts from its default, as in Kafka's ConfigAdminManager
                current = configs.get(op.name)
                if current is None:
                    current = _default(resource_type, op.name)
                items = [x for x in (current.split(",") if current else []) if x]
                values = [v.strip() for v in (op.value or "").split(",") if v.strip()]
                if op.config_operation == APPEND:
                    items += [v for v in values if v not in items]
                else:
                    items = [x for x in items if x not in values]
                configs[op.name] = ",".join(items)
            else:
                raise InvalidRequest(f"Unknown config operation {op.config_operation}")
        return configs

    return apply


@handler(
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    "0-1",
    acl=(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC),
    blocking=True,
)
def handle_incremental_alter_configs(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    named = [(res.resource_type, res.resource_name) for res in request.resources]
    for res in request.resources:
        message = _refusal(res, named, incremental=True)
        if message is not None:
            code = ErrorCode.INVALID_REQUEST
        else:
            code, message = _alter(
                ctx, res, request.validate_only, _incremental(list(res.configs), res.resource_type)
            )
        responses.append(
            iac.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return iac.IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=responses)


@error_response(ApiKey.ALTER_CONFIGS)
def alter_configs_error(
    request: AlterConfigsRequest, code: ErrorCode, message: str | None
) -> AlterConfigsResponse:
    return ac.AlterConfigsResponse(
        responses=[
            ac.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )


@error_response(ApiKey.INCREMENTAL_ALTER_CONFIGS)
def incremental_alter_configs_error(
    request: Struct, code: ErrorCode, message: str | None
) -> IncrementalAlterConfigsResponse:
    return iac.IncrementalAlterConfigsResponse(
        responses=[
            iac.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in request.resources
        ]
    )
