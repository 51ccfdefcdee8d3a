"""UpdateFeatures (key 57): finalizes feature levels for the whole cluster (KIP-584). v1 replaces
AllowDowngrade with UpgradeType (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and adds
ValidateOnly; v2 answers no per-feature results (KIP-1022). Every version is flexible."""

from protocol.api_keys import ApiKey
from protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

FeatureUpdateKey = struct(
    "FeatureUpdateKey",
    [
        f("feature", STRING),
        f("max_version_level", INT16),
        f("allow_downgrade", BOOL, "0"),
        f("upgrade_type", INT8, "1+", default=1),
    ],
)

UpdateFeaturesRequest = message(
    "UpdateFeaturesRequest",
    api_key=ApiKey.UPDATE_FEATURES,
    kind="request",
    valid="0-2",
    flexible="0+",
    fields=[
        f("timeout_ms", INT32, default=60000),
        f("feature_updates", array(FeatureUpdateKey)),
        f("validate_only", BOOL, "1+"),
    ],
)

UpdatableFeatureResult = struct(
    "UpdatableFeatureResult",
    [
        f("feature", STRING),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
    ],
)

UpdateFeaturesResponse = message(
    "UpdateFeaturesResponse",
    api_key=ApiKey.UPDATE_FEATURES,
    kind="response",
    valid="0-2",
    flexible="0+",
    fields=[
        f("throttle_time_ms", INT32),
        f("error_code", INT16),
        f("error_message", STRING, null="0+", default=None),
        f("results", array(UpdatableFeatureResult), "0-1"),
    ],
)
