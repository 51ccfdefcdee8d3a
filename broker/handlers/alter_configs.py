"""AlterConfigs (replace a resource's whole config) and IncrementalAlterConfigs (SET, DELETE,
APPEND, SUBTRACT per key). Topics are supported; dynamic broker configs are refused clearly."""

from __future__ import annotations

from collections.abc import Callable

from broker.config import TOPIC_CONFIGS
from broker.config_describe import ConfigResourceType
from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from coordination.errors import InvalidConfig, InvalidRequest, KafkaApiError, UnknownTopic
from protocol.acl import AclOperation, ResourceType
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
            topic = broker.metadata.view.topics.get(resource.resource_name)
            if topic is None:
                raise UnknownTopic(f"Topic {resource.resource_name} does not exist.")
            configs = new_configs(dict(topic.configs))
            broker.admin.check_configs(configs)
            if not validate_only:
                broker.admin.set_topic_configs(topic.name, configs)
        elif resource.resource_type in (
            ConfigResourceType.BROKER,
            ConfigResourceType.BROKER_LOGGER,
        ):
            raise InvalidRequest(
                "Odradek does not support dynamic broker configs; set them in "
                "server.properties and restart the broker."
            )
        else:
            raise InvalidRequest(f"Unsupported resource type {resource.resource_type}")
    except KafkaApiError as e:
        return e.error_code, str(e)
    return ErrorCode.NONE, None


@handler(ApiKey.ALTER_CONFIGS, "0-2", acl=(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC))
def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for res in request.resources:
        # Kafka's AlterConfigs ignores entries without a value (AdminManager.alterConfigs)
        replacement: dict[str, str] = {c.name: c.value for c in res.configs if c.value is not None}

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


def _incremental(ops: list[Struct]) -> Callable[[dict[str, str]], dict[str, str]]:
    def apply(configs: dict[str, str]) -> dict[str, str]:
        seen: set[str] = set()
        for op in ops:
            if op.name in seen:
                raise InvalidRequest(f"Duplicate config key {op.name}")
            seen.add(op.name)
            key = TOPIC_CONFIGS.get(op.name)
            if key is None:
                raise InvalidConfig(f"Unknown topic config name: {op.name}")
            if op.config_operation == SET:
                configs[op.name] = op.value
            elif op.config_operation == DELETE:
                configs.pop(op.name, None)
            elif op.config_operation in (APPEND, SUBTRACT):
                if key.kind != "list":
                    raise InvalidConfig(
                        f"Config value append/subtract is not allowed for config key {op.name}"
                    )
                current = configs.get(op.name)
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
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "0-1", acl=(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC)
)
def handle_incremental_alter_configs(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = []
    for res in request.resources:
        code, message = _alter(ctx, res, request.validate_only, _incremental(list(res.configs)))
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
