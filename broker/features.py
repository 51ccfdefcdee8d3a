"""Feature versioning (KIP-584): the features this broker supports, the levels the cluster
finalized, and UpdateFeatures' checks, as Kafka's controller makes them
(``FeatureControlManager.updateFeature``).

A feature's level is the one UpdateFeatures finalized (kept in the metadata store, so every
broker of a cluster reads the same), else the one the broker's configuration gives it: the
configuration is the level a new cluster starts at, as ``kafka-storage format --feature`` sets
it for Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from coordination.metadata.view import ClusterView

TRANSACTION_VERSION = "transaction.version"
#: feature -> the lowest and highest level this broker supports (ApiVersions' SupportedFeatures);
#: each has a configuration key of its own name, the level until one is finalized
SUPPORTED: Mapping[str, tuple[int, int]] = {TRANSACTION_VERSION: (0, 2)}


class Config(Protocol):
    """The broker's configuration, as these functions read it (a mapping will do)."""

    def __getitem__(self, name: str) -> Any: ...


#: Kafka's FeatureUpdate.UpgradeType codes (UpdateFeatures v1+)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def finalized_level(config: Config, view: ClusterView, feature: str) -> int:
    """The level finalized in the metadata store, else the configured one (0 for a feature
    this broker does not support, as Kafka's controller counts a feature it never finalized)."""
    level = view.features.get(feature)
    if level is not None:
        return level
    return int(config[feature]) if feature in SUPPORTED else 0


def finalized_levels(config: Config, view: ClusterView) -> dict[str, int]:
    return {name: finalized_level(config, view, name) for name in SUPPORTED}


def _range(feature: str) -> str:
    low, high = SUPPORTED[feature]
    return str(low) if low == high else f"{low}-{high}"


def refusal(
    feature: str, level: int, upgrade_type: int, current: int, controller_id: int
) -> str | None:
    """Why Kafka's controller refuses to finalize ``feature`` at ``level`` from ``current``
    (the whole message it answers with INVALID_UPDATE_VERSION), or None. Every broker of an
    Odradek cluster supports the same levels as this one, so the controller's own check is the
    cluster's."""

    def invalid(reason: str) -> str:
        return f"Invalid update version {level} for feature {feature}. {reason}"

    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return invalid("The controller does not support the given upgrade type.")
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    supported = SUPPORTED.get(feature)
    if supported is None or not supported[0] <= level <= supported[1]:
        if supported is None or supported[1] == 0:
            return invalid(f"Local controller {controller_id} does not support this feature.")
        return invalid(f"Local controller {controller_id} only supports versions {_range(feature)}")
    if level < current and upgrade_type == UPGRADE:
        return invalid(
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade."
        )
    if level > current and upgrade_type != UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    return None
