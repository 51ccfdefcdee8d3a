"""ApiVersions (key 18): which APIs and versions a broker supports.

v3 (KIP-511) carries the client's software name and version; v4 lets a supported feature's
lowest level be 0 (KAFKA-17011); v5 names the cluster and the broker the client means to reach,
so that a broker reached by mistake (an address reused by another cluster or broker) tells it
to bootstrap again.

The response header is always v0, even in flexible versions, and an unsupported request version
is answered with error 35 and a v0 body (see protocol.headers and the broker's handler).
"""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct

ApiVersionsRequest = message(
    "ApiVersionsRequest",
    api_key=ApiKey.API_VERSIONS,
    kind="request",
    valid="0-5",
    flexible="3+",
    fields=[
        f("client_software_name", STRING, "3+"),
        f("client_software_version", STRING, "3+"),
        # v5: the cluster and the broker the client means to reach (both or neither)
        f("cluster_id", STRING, "5+", null="5+", default=None),
        f("node_id", INT32, "5+", default=-1),
    ],
)

ApiVersion = struct(
    "ApiVersion",
    [
        f("api_key", INT16),
        f("min_version", INT16),
        f("max_version", INT16),
    ],
)

SupportedFeatureKey = struct(
    "SupportedFeatureKey",
    [
        f("name", STRING, "3+"),
        f("min_version", INT16, "3+"),
        f("max_version", INT16, "3+"),
    ],
)

FinalizedFeatureKey = struct(
    "FinalizedFeatureKey",
    [
        f("name", STRING, "3+"),
        f("max_version_level", INT16, "3+"),
        f("min_version_level", INT16, "3+"),
    ],
)

ApiVersionsResponse = message(
    "ApiVersionsResponse",
    api_key=ApiKey.API_VERSIONS,
    kind="response",
    valid="0-5",
    flexible="3+",
    fields=[
        f("error_code", INT16),
        f("api_keys", array(ApiVersion)),
        f("throttle_time_ms", INT32, "1+"),
        f("supported_features", array(SupportedFeatureKey), "3+", tag=0),
        f("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
        f("finalized_features", array(FinalizedFeatureKey), "3+", tag=2),
        f("zk_migration_ready", BOOL, "3+", tag=3, default=False),
    ],
)
