"""A part of the reference that is missing (Kafka's jars, Java) skips a test on a developer's
machine and fails it under CI (issue 15): CI installs everything, so a missing part there is a
broken install step that must not pass as a skip."""

from __future__ import annotations

import pytest

from tests.support.kafka_reference import reference_missing, require_reference

#: a release no cache holds
ABSENT = "0.0.0-absent"


def test_a_missing_release_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_reference(ABSENT)
    assert str(skipped.value) == reference_missing(ABSENT)


@pytest.mark.parametrize("value", ["true", "1"])
def test_a_missing_release_fails_under_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI is set") as failed:
        require_reference(ABSENT)
    assert str(reference_missing(ABSENT)) in str(failed.value)


def test_an_empty_ci_variable_is_not_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        require_reference(ABSENT)
