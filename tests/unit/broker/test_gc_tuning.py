"""The broker process's collector thresholds (see broker.gc_tuning)."""

from __future__ import annotations

import gc

from broker import gc_tuning


def test_configure_sets_the_thresholds():
    before = gc.get_threshold()
    try:
        gc_tuning.configure()
        assert gc.get_threshold() == (
            gc_tuning.YOUNG_THRESHOLD,
            gc_tuning.MIDDLE_THRESHOLD,
            gc_tuning.OLD_THRESHOLD,
        )
        assert gc.isenabled()
    finally:
        gc.set_threshold(*before)
