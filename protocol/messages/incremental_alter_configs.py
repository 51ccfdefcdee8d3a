"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from individual config
keys of resources (KIP-339), leaving other keys alone.

``config_operation``: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT. v1 is flexible.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

AlterableConfig = struct(
    "AlterableConfig",
    [
        f("name", STRING),
        f("config_operation", INT8),
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

IncrementalAlterConfigsRequest = message(
    "IncrementalAlterConfigsRequest",
    api_key=ApiKey.INCREMENTAL_ALTER_CONFIGS,
    kind="request",
    valid="0-1",
    flexible="1+",
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

IncrementalAlterConfigsResponse = message(
    "IncrementalAlterConfigsResponse",
    api_key=ApiKey.INCREMENTAL_ALTER_CONFIGS,
    kind="response",
    valid="0-1",
    flexible="1+",
    fields=[
        f("throttle_time_ms", INT32),
        f("responses", array(AlterConfigsResourceResponse)),
    ],
)
