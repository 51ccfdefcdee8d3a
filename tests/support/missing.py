"""What a test does when a part of its set-up is missing on this machine (Java, Kafka's jars,
ZooKeeper, a tmpfs mount, promtool): skip with the reason, except under CI (the ``CI``
environment variable set and not empty, as CI machines and ``.ci/run`` set it), where
``make test`` installs everything, so a missing part is a broken install step and fails the
test instead of passing as a skip."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def skip_or_fail(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the test set-up must be complete)", pytrace=False)
    pytest.skip(reason)
