"""ApiVersions: the versions of every API we handle, derived from the handler registry.

Unsupported ApiVersions versions are answered by the dispatcher (error 35, v0 body). Default-valued
tagged fields are left out (librdkafka 2.0.2 misparses some optional tagged fields here).

v3+ list the features the broker supports and those finalized for the cluster: Kafka's
``transaction.version`` (0-2), finalized at the level of the broker's ``transaction.version``
(the Java client 4.0+ reads it to choose KIP-890 part 2). As Kafka, v3 leaves out a supported
feature whose lowest level is 0 (older clients cannot read one), and a feature at level 0 is not
finalized. The finalized features' epoch is 0, as Kafka in ZooKeeper mode reports its
``/feature`` znode's.

v3+ carry the client's software name and version (KIP-511): they are kept on the connection's
session (Kafka's ``ClientInformation``), where client telemetry subscriptions match them
(KIP-714's ``client_software_name`` and ``client_software_version``). As Kafka's
``ApiVersionsRequest.isValid``, each must be letters, digits, ``-`` and ``.``, beginning and
ending with a letter or digit; otherwise the answer is INVALID_REQUEST with no API listed, and
the session keeps no client information.

v5 names the cluster and the broker the client means to reach (both, or neither: a cluster id
without a node id, or the other way round, is INVALID_REQUEST). When either is not this
broker's, the answer is REBOOTSTRAP_REQUIRED with no API listed, as Kafka 4.4 answers: the
client reached another cluster, or another broker, at an address it knew, and bootstraps again.
"""

from __future__ import annotations

import re

from broker.dispatch import RequestContext
from broker.features import SUPPORTED, finalized_levels
from broker.registry import REGISTRY, error_response, handler
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)

#: the KIP-848 APIs, advertised only while group.coordinator.rebalance.protocols has "consumer"
CONSUMER_PROTOCOL_APIS = frozenset(
    {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
)

#: the client telemetry APIs (KIP-714), advertised only while pushed metrics have somewhere to
#: go, the metrics endpoint (``metrics.port``): Kafka advertises them only when a metrics
#: reporter receives client telemetry, so clients with nowhere to send metrics collect none
TELEMETRY_APIS = frozenset({ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY})


#: KIP-511's rule for client_software_name and client_software_version
SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _valid(value: str | None) -> bool:
    return value is not None and SOFTWARE_NAME_OR_VERSION.fullmatch(value) is not None


def _advertised(ctx: RequestContext, key: int) -> bool:
    if key in CONSUMER_PROTOCOL_APIS:
        groups = ctx.services.groups
        return groups is not None and "consumer" in groups.coordinator.config.rebalance_protocols
    if key in TELEMETRY_APIS:
        return ctx.services.handler_config.metrics_port > 0
    return True


@handler(ApiKey.API_VERSIONS, "0-5", before_authentication=True)
def handle_api_versions(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3:
        if not (_valid(request.client_software_name) and _valid(request.client_software_version)):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, throttle_time_ms=0)
        ctx.session.client_software_name = request.client_software_name or ""
        ctx.session.client_software_version = request.client_software_version or ""
    if ctx.api_version >= 5 and (request.cluster_id is not None or request.node_id != -1):
        if request.cluster_id is None or request.node_id == -1:
            # one without the other
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, throttle_time_ms=0)
        if (
            request.cluster_id != ctx.services.metadata.view.cluster_id
            or request.node_id != ctx.services.broker_id
        ):
            return ApiVersionsResponse(
                error_code=ErrorCode.REBOOTSTRAP_REQUIRED, throttle_time_ms=0
            )
    view = ctx.services.metadata.view
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE,
        supported_features=[
            SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in SUPPORTED.items()
        ]
        if ctx.api_version >= 4
        else [],
        finalized_features_epoch=view.features_epoch,
        finalized_features=[
            FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
            for name, level in finalized_levels(ctx.services.config, view).items()
            if level > 0
        ],
        api_keys=[
            ApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, lo, hi in REGISTRY.api_versions()
            if _advertised(ctx, key)
        ],
        throttle_time_ms=0,
    )


@error_response(ApiKey.API_VERSIONS)
def api_versions_error(
    request: ApiVersionsRequest, code: ErrorCode, message: str | None
) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=code)
