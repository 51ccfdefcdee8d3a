"""UpdateFeatures: finalizes feature levels for the whole cluster (KIP-584), as Kafka's
controller does (``QuorumController.updateFeatures``): every update is checked
(:func:`broker.features.refusal`) and then all are written at once, or none when one is
refused; the first refusal is the answer's error. ALTER on the cluster is required. v0's
``AllowDowngrade`` is not read: Kafka's controller takes every v0 update as an upgrade."""

from __future__ import annotations

from broker.dispatch import RequestContext
from broker.features import finalized_level, refusal
from broker.registry import error_response, handler
from protocol.acl import AclOperation, ResourceType
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.update_features import (
    UpdatableFeatureResult,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)

FAILED = "The update failed for all features since the following feature had an error: "


@handler(
    ApiKey.UPDATE_FEATURES, "0-2", acl=(AclOperation.ALTER, ResourceType.CLUSTER), blocking=True
)
def handle_update_features(
    ctx: RequestContext, request: UpdateFeaturesRequest
) -> UpdateFeaturesResponse:
    metadata = ctx.services.metadata
    view = metadata.view
    levels: dict[str, int] = {}
    for update in request.feature_updates:
        name, level = update.feature, update.max_version_level
        upgrade_type = update.upgrade_type if ctx.api_version >= 1 else 1
        current = finalized_level(ctx.services.config, view, name)
        reason = refusal(name, level, upgrade_type, current, view.controller_id)
        if reason is not None:
            return UpdateFeaturesResponse(
                error_code=ErrorCode.INVALID_UPDATE_VERSION, error_message=FAILED + reason
            )
        levels[name] = level
    if levels and not request.validate_only:
        metadata.update_features(levels)
    return UpdateFeaturesResponse(
        error_code=ErrorCode.NONE,
        results=[
            # Kafka's controller names the error (Errors.NONE.message())
            UpdatableFeatureResult(
                feature=u.feature, error_code=ErrorCode.NONE, error_message="NONE"
            )
            for u in request.feature_updates
        ]
        if ctx.api_version <= 1
        else [],
    )


@error_response(ApiKey.UPDATE_FEATURES)
def update_features_error(
    request: UpdateFeaturesRequest, code: ErrorCode, message: str | None
) -> UpdateFeaturesResponse:
    return UpdateFeaturesResponse(error_code=code, error_message=message)
