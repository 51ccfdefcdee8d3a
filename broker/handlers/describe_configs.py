"""DescribeConfigs: every config of a topic or broker with its value, source and synonyms; a
client metrics subscription's configs (KIP-714, source CLIENT_METRICS_CONFIG); a group's
(KIP-848, source DYNAMIC_GROUP_CONFIG where the group has its own)."""

from __future__ import annotations

from collections.abc import Mapping

from broker.config_describe import (
    ConfigEntry,
    ConfigResourceType,
    ConfigSource,
    ConfigType,
    describe_broker,
    describe_broker_default,
    describe_loggers,
    describe_topic,
)
from broker.dispatch import RequestContext
from broker.group_configs import describe_group
from broker.registry import error_response, handler
from broker.telemetry import CONFIG_NAMES as CLIENT_METRICS_CONFIGS
from broker.telemetry import DEFAULT_INTERVAL_MS, PUSH_INTERVAL_MS
from protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)


def _entry(e: ConfigEntry, synonyms: bool, docs: bool) -> DescribeConfigsResourceResult:
    return DescribeConfigsResourceResult(
        name=e.name,
        value=e.value,
        read_only=e.read_only,
        config_source=e.source,
        is_default=e.source == ConfigSource.DEFAULT_CONFIG,
        is_sensitive=e.sensitive,
        synonyms=[DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms]
        if synonyms
        else [],
        config_type=e.type,
        documentation=e.documentation if docs else None,
    )


def _client_metrics(configs: Mapping[str, str], keys: list[str] | None) -> list[ConfigEntry]:
    """A client metrics subscription's configs: those set (CLIENT_METRICS_CONFIG) and the
    others with their defaults (``interval.ms`` 300000, empty lists)."""
    out = []
    for name in CLIENT_METRICS_CONFIGS:
        if keys is not None and name not in keys:
            continue
        kind = ConfigType.INT if name == PUSH_INTERVAL_MS else ConfigType.LIST
        if name in configs:
            out.append(ConfigEntry(name, configs[name], ConfigSource.CLIENT_METRICS_CONFIG,
                                   read_only=False, sensitive=False, type=kind))  # fmt: skip
        else:
            default = str(DEFAULT_INTERVAL_MS) if name == PUSH_INTERVAL_MS else ""
            out.append(ConfigEntry(name, default, ConfigSource.DEFAULT_CONFIG,
                                   read_only=False, sensitive=False, type=kind))  # fmt: skip
    return out


@handler(ApiKey.DESCRIBE_CONFIGS, "0-4", acl=(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC))
def handle_describe_configs(
    ctx: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    broker = ctx.services
    view = broker.metadata.view
    results = []
    for res in request.resources:
        keys = res.configuration_keys
        code, message, entries = ErrorCode.NONE, None, []
        if res.resource_type == ConfigResourceType.TOPIC:
            topic = view.topics.get(res.resource_name)
            if not ctx.authorize(
                AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, res.resource_name
            ):
                code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
            elif topic is None:
                # no message, as Kafka answers
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                entries = describe_topic(broker.config, topic.configs, keys)
        elif res.resource_type in (
            ConfigResourceType.BROKER,
            ConfigResourceType.BROKER_LOGGER,
            ConfigResourceType.CLIENT_METRICS,
        ) and not ctx.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Authorization failed."
        elif res.resource_type == ConfigResourceType.BROKER:
            if res.resource_name not in ("", str(broker.broker_id)):
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {broker.broker_id} or empty string, "
                    f"but received {res.resource_name}",
                )
            elif res.resource_name == "":
                entries = describe_broker_default(broker.config, keys)
            else:
                entries = describe_broker(broker.config, keys)
        elif res.resource_type == ConfigResourceType.BROKER_LOGGER:
            if res.resource_name != str(broker.broker_id):
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {broker.broker_id}, but received "
                    f"{res.resource_name}",
                )
            else:
                try:
                    entries = describe_loggers(keys)
                except ValueError as e:
                    code, message = ErrorCode.INVALID_CONFIG, str(e)
        elif res.resource_type == ConfigResourceType.GROUP:
            if not res.resource_name:
                code, message = ErrorCode.INVALID_REQUEST, "Group name must not be empty"
            elif not ctx.authorize(
                AclOperation.DESCRIBE_CONFIGS, ResourceType.GROUP, res.resource_name
            ):
                code, message = ErrorCode.GROUP_AUTHORIZATION_FAILED, "Authorization failed."
            else:
                entries = describe_group(
                    broker.config, view.group_configs.get(res.resource_name, {}), keys
                )
        elif res.resource_type == ConfigResourceType.CLIENT_METRICS:
            if not res.resource_name:
                code, message = (
                    ErrorCode.INVALID_REQUEST,
                    "Client metrics subscription name must not be empty",
                )
            else:
                entries = _client_metrics(view.client_metrics.get(res.resource_name, {}), keys)
        else:
            code, message = (
                ErrorCode.INVALID_REQUEST,
                f"Unsupported resource type {res.resource_type}",
            )
        results.append(
            DescribeConfigsResult(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=[
                    _entry(e, request.include_synonyms, request.include_documentation)
                    for e in entries
                ],
            )
        )
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


@error_response(ApiKey.DESCRIBE_CONFIGS)
def describe_configs_error(
    request: DescribeConfigsRequest, code: ErrorCode, message: str | None
) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(
        results=[
            DescribeConfigsResult(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[],
            )
            for r in request.resources
        ]
    )
