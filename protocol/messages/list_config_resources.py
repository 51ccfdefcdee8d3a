"""ListConfigResources (key 74; v0 was ListClientMetricsResources, KIP-714): the names of the
config resources that have configs.

v0 lists the client-metrics subscriptions. v1 (KIP-1142) takes the resource types to list and
answers each resource's type. Flexible from v0.
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT8, INT16, INT32, STRING, array, f, message, struct

#: ConfigResource.Type.CLIENT_METRICS, the type every v0 resource has
CLIENT_METRICS_TYPE = 16

ListConfigResourcesRequest = message(
    "ListConfigResourcesRequest",
    api_key=ApiKey.LIST_CONFIG_RESOURCES,
    kind="request",
    valid="0-1",
    flexible="0+",
    fields=[
        f("resource_types", array(INT8), "1+"),
    ],
)

ListedConfigResource = struct(
    "ListedConfigResource",
    [
        f("resource_name", STRING),
        f("resource_type", INT8, "1+", default=CLIENT_METRICS_TYPE),
    ],
)

ListConfigResourcesResponse = message(
    "ListConfigResourcesResponse",
    api_key=ApiKey.LIST_CONFIG_RESOURCES,
    kind="response",
    valid="0-1",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("config_resources", array(ListedConfigResource)),
    ],
)
