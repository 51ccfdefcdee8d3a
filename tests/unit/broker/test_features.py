"""Feature versioning (KIP-584): UpdateFeatures checked as Kafka's controller checks it
(FeatureControlManager), the levels kept by the metadata store across a restart, and
ApiVersions answering the finalized levels and their epoch; the configuration's level until
one is finalized."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.features import SAFE_DOWNGRADE, UNSAFE_DOWNGRADE, UPGRADE, refusal
from broker.handlers.api_versions import handle_api_versions
from broker.handlers.update_features import handle_update_features
from coordination.metadata.embedded import EmbeddedMetadataStore
from coordination.metadata.view import BrokerInfo, Endpoint
from protocol.error_codes import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.update_features import FeatureUpdateKey, UpdateFeaturesRequest

TV = "transaction.version"


@pytest.mark.parametrize(
    ("feature", "level", "upgrade_type", "current", "reason"),
    [
        (TV, 2, UPGRADE, 1, None),
        (TV, 2, UPGRADE, 2, None),  # the same level: nothing to refuse
        (TV, 1, SAFE_DOWNGRADE, 2, None),
        (TV, 0, UNSAFE_DOWNGRADE, 2, None),
        (TV, 2, 4, 0, "The controller does not support the given upgrade type."),
        (TV, -1, UPGRADE, 0, "A feature version cannot be less than 0."),
        (TV, 3, UPGRADE, 2, "Local controller 7 only supports versions 0-2"),
        ("no.such.feature", 1, UPGRADE, 0, "Local controller 7 does not support this feature."),
        (
            TV,
            1,
            UPGRADE,
            2,
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade.",
        ),
        (TV, 2, SAFE_DOWNGRADE, 1, "Can't downgrade to a newer version."),
    ],
)
def test_refusals_are_kafkas(
    feature: str, level: int, upgrade_type: int, current: int, reason: str | None
) -> None:
    got = refusal(feature, level, upgrade_type, current, controller_id=7)
    if reason is None:
        assert got is None
    else:
        assert got == f"Invalid update version {level} for feature {feature}. {reason}"


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedMetadataStore:
    broker = BrokerInfo(0, (Endpoint("PLAINTEXT", "localhost", 9092),))
    s = EmbeddedMetadataStore(tmp_path / "metadata.json", broker)
    s.start()
    return s


def _ctx(store: EmbeddedMetadataStore, version: int, level: int = 2) -> Any:
    services = SimpleNamespace(
        metadata=store,
        config={"transaction.version": level},
        broker_id=0,
        groups=None,
        handler_config=SimpleNamespace(metrics_port=0),
    )
    return SimpleNamespace(services=services, api_version=version, session=SimpleNamespace())


def _update(store: EmbeddedMetadataStore, version: int, level: int, **kw: Any) -> Any:
    validate_only = kw.pop("validate_only", False)
    update = FeatureUpdateKey(feature=TV, max_version_level=level, **kw)
    request = UpdateFeaturesRequest(feature_updates=[update], validate_only=validate_only)
    return handle_update_features(_ctx(store, version), request)


def _finalized(store: EmbeddedMetadataStore, level: int = 2) -> tuple[int, dict[str, int]]:
    answer = handle_api_versions(
        _ctx(store, 4, level),
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
    )
    return answer.finalized_features_epoch, {
        f.name: f.max_version_level for f in answer.finalized_features
    }


def test_levels_are_finalized_kept_and_answered(store: EmbeddedMetadataStore) -> None:
    # before any update: the configuration's level, epoch 0 (none at level 0)
    assert _finalized(store) == (0, {TV: 2})
    assert _finalized(store, level=0) == (0, {})
    answer = _update(store, 1, 1, upgrade_type=SAFE_DOWNGRADE)
    assert (answer.error_code, answer.error_message) == (ErrorCode.NONE, None)
    assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == [
        (TV, ErrorCode.NONE, "NONE")
    ]
    assert _finalized(store) == (1, {TV: 1})
    assert _finalized(store, level=2) == (1, {TV: 1})  # finalized: the configuration no more
    # v2 answers no per-feature results
    answer = _update(store, 2, 2)
    assert (answer.error_code, answer.results) == (ErrorCode.NONE, [])
    assert _finalized(store) == (2, {TV: 2})
    # a restart reads them back
    again = EmbeddedMetadataStore(store.path, store.broker)
    again.start()
    assert (again.view.features, again.view.features_epoch) == ({TV: 2}, 2)
    assert _finalized(again, level=0) == (2, {TV: 2})


def test_refused_and_validate_only_updates_change_nothing(store: EmbeddedMetadataStore) -> None:
    answer = _update(store, 1, 3)
    assert answer.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert answer.error_message == (
        "The update failed for all features since the following feature had an error: "
        "Invalid update version 3 for feature transaction.version. Local controller 0 only "
        "supports versions 0-2"
    )
    assert answer.results == []
    answer = _update(store, 1, 1, upgrade_type=SAFE_DOWNGRADE, validate_only=True)
    assert answer.error_code == ErrorCode.NONE
    # v0: AllowDowngrade is not read, as Kafka's controller does not read it: an upgrade
    answer = _update(store, 0, 1, allow_downgrade=True)
    assert answer.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert (store.view.features, store.view.features_epoch) == ({}, 0)
