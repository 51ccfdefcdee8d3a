"""Property tests over many parametrized cases.

Hypothesis' pytest plugin (seen in 6.170) gives each parametrized item of an ``@given`` test a
new settings object whose parent is the previous item's, so one test function parametrized over
N cases ends with a chain of N settings. Reading ``settings.database`` walks that chain whenever
the database is None, which it is under the ``ci`` profile Hypothesis loads when ``$CI`` is set;
at about a thousand cases the walk exceeds the recursion limit and the remaining cases fail with
RecursionError. ``given_data`` builds a fresh ``@given`` function for each case instead, so no
chain grows. Use it in any test parametrized over more than a few dozen cases.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st


def given_data(test_settings: settings, body: Callable[[st.DataObject], None]) -> None:
    """Run ``body(data)`` under ``test_settings`` as one Hypothesis test."""

    @test_settings
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        body(data)

    case()
