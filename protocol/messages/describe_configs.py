"""DescribeConfigs (key 32): read the configs of topics, brokers and other resources.

v0 results carry ``is_default``; v1 replaces it with ``config_source`` and adds synonyms (asked for
with ``include_synonyms``); v2 is v1 (the broker answers before throttling); v3 adds
``include_documentation`` and each config's ``config_type`` and ``documentation``; v4 is flexible.
Kafka 4 dropped v0. A ``configuration_keys`` of null means every key.
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

DescribeConfigsResource = struct(
    "DescribeConfigsResource",
    [
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("configuration_keys", array(STRING), null="0+"),
    ],
)

DescribeConfigsRequest = message(
    "DescribeConfigsRequest",
    api_key=ApiKey.DESCRIBE_CONFIGS,
    kind="request",
    valid="0-4",
    flexible="4+",
    fields=[
        f("resources", array(DescribeConfigsResource)),
        f("include_synonyms", BOOL, "1+", default=False),
        f("include_documentation", BOOL, "3+", default=False),
    ],
)

DescribeConfigsSynonym = struct(
    "DescribeConfigsSynonym",
    [
        f("name", STRING, "1+"),
        f("value", STRING, "1+", null="0+"),
        f("source", INT8, "1+"),
    ],
)

DescribeConfigsResourceResult = struct(
    "DescribeConfigsResourceResult",
    [
        f("name", STRING),
        f("value", STRING, null="0+"),
        f("read_only", BOOL),
        f("config_source", INT8, "1+", default=-1),
        f("is_default", BOOL, "0"),
        f("is_sensitive", BOOL),
        f("synonyms", array(DescribeConfigsSynonym), "1+"),
        f("config_type", INT8, "3+", default=0),
        f("documentation", STRING, "3+", null="0+"),
    ],
)

DescribeConfigsResult = struct(
    "DescribeConfigsResult",
    [
        f("error_code", INT16),
        f("error_message", STRING, null="0+"),
        f("resource_type", INT8),
        f("resource_name", STRING),
        f("configs", array(DescribeConfigsResourceResult)),
    ],
)

DescribeConfigsResponse = message(
    "DescribeConfigsResponse",
    api_key=ApiKey.DESCRIBE_CONFIGS,
    kind="response",
    valid="0-4",
    flexible="4+",
    fields=[
        f("throttle_time_ms", INT32),
        f("results", array(DescribeConfigsResult)),
    ],
)
