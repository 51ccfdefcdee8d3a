"""ListConfigResources (v0: ListClientMetricsResources, KIP-714; v1: KIP-1142): the config
resources a client may describe, by type. DESCRIBE_CONFIGS on the cluster, as Kafka's.

v0 lists the client-metrics subscriptions. v1 takes the types to list (none: every type it
knows) and answers each resource's type, type by type in Kafka's order (groups, client-metrics
subscriptions, broker loggers, brokers, topics), whatever order the request names them in:
- groups with configs of their own, whether or not the group exists;
- client-metrics subscriptions;
- the brokers with an endpoint on the request's listener, for BROKER and BROKER_LOGGER alike;
- every topic, internal ones included, with or without configs.
A type Kafka does not list (UNKNOWN, ANY, another number) answers UNSUPPORTED_VERSION and
nothing else.
"""

from __future__ import annotations

from broker.config_describe import ConfigResourceType
from broker.dispatch import RequestContext
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.list_config_resources import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListedConfigResource,
)

#: the types each version lists, in the order Kafka answers them (KafkaApis
#: handleListConfigResources)
_LISTED = (
    ConfigResourceType.GROUP,
    ConfigResourceType.CLIENT_METRICS,
    ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.BROKER,
    ConfigResourceType.TOPIC,
)
_V0_LISTED = (ConfigResourceType.CLIENT_METRICS,)


@handler(
    ApiKey.LIST_CONFIG_RESOURCES,
    "0-1",
    acl=(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER),
)
def handle_list_config_resources(
    ctx: RequestContext, request: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    supported = _V0_LISTED if ctx.api_version == 0 else _LISTED
    wanted = set(request.resource_types) if request.resource_types else set(supported)
    if not wanted <= set(supported):
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    view = ctx.services.metadata.view
    brokers = [
        str(b.broker_id)
        for b in sorted(view.brokers.values(), key=lambda b: b.broker_id)
        if any(ep.listener == ctx.listener for ep in b.endpoints)
    ]
    names: dict[ConfigResourceType, list[str]] = {
        ConfigResourceType.GROUP: sorted(view.group_configs),
        ConfigResourceType.CLIENT_METRICS: sorted(view.client_metrics),
        ConfigResourceType.BROKER_LOGGER: brokers,
        ConfigResourceType.BROKER: brokers,
        ConfigResourceType.TOPIC: sorted(view.topics),
    }
    return ListConfigResourcesResponse(
        error_code=ErrorCode.NONE,
        config_resources=[
            ListedConfigResource(resource_name=name, resource_type=kind)
            for kind in supported
            if kind in wanted
            for name in names[kind]
        ],
    )


@error_response(ApiKey.LIST_CONFIG_RESOURCES)
def list_config_resources_error(
    request: ListConfigResourcesRequest, code: ErrorCode, message: str | None
) -> ListConfigResourcesResponse:
    return ListConfigResourcesResponse(error_code=code)
