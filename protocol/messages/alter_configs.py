"""AlterConfigs (key 33): replace the whole config set of resources (the legacy, non-incremental
form; unset keys revert to their defaults).

v1 is v0 (the broker answers before throttling); v2 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

AlterableConfig = struct(
    "AlterableConfig",
    [
        f("name", STRING),
        f("value", STRING, null="0+"),
    ],
)

AlterConfigsResource = struct(
    "AlterConfigsResource",
    [
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("configs", array(AlterableConfig)),
    ],
)

AlterConfigsRequest = message(
    "AlterConfigsRequest",
    api_key=ApiKey.ALTER_CONFIGS,
    kind="request",
    valid="0-2",
    flexible="2+",
    fields=[
        f("resources", array(AlterConfigsResource)),
        f("validate_only", BOOL),
    ],
)

AlterConfigsResourceResponse = struct(
    "AlterConfigsResourceResponse",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("resource_type", INT8),
        f("resource_name", STRING),
    ],
)

AlterConfigsResponse = message(
    "AlterConfigsResponse",
    api_key=ApiKey.ALTER_CONFIGS,
    kind="response",
    valid="0-2",
    flexible="2+",
    fields=[
        f("throttle_time_ms", INT32),
        f("responses", array(AlterConfigsResourceResponse)),
    ],
)
