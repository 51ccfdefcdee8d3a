"""The client side of fetch sessions (Kafka's FetchSessionHandler rules): full then incremental
requests, changed and forgotten partitions, errors that start over."""

from __future__ import annotations

from protocol.error_codes import ErrorCode
from protocol.fetch_session import FetchSessionHandler


def test_full_then_incremental() -> None:
    h = FetchSessionHandler()
    first = h.build({("t", 0): (0, 5), ("t", 1): (0, 7)})
    assert (first.session_id, first.epoch, first.full) == (0, 0, True)
    assert list(first.to_send) == [("t", 0), ("t", 1)] and first.to_forget == []
    assert h.handle_response(ErrorCode.NONE, 42)
    # nothing changed: an empty incremental request
    inc = h.build({("t", 0): (0, 5), ("t", 1): (0, 7)})
    assert (inc.session_id, inc.epoch, inc.full, inc.to_send, inc.to_forget) == (
        42,
        1,
        False,
        {},
        [],
    )
    assert h.handle_response(ErrorCode.NONE, 42)
    # partition 0 moved on, 1 left, 2 joined
    inc = h.build({("t", 0): (0, 9), ("t", 2): (0, 0)})
    assert (inc.epoch, inc.to_send, inc.to_forget) == (
        2,
        {("t", 0): (0, 9), ("t", 2): (0, 0)},
        [("t", 1)],
    )
    assert h.handle_response(ErrorCode.NONE, 42)
    assert h.build({("t", 0): (0, 9), ("t", 2): (0, 0)}).epoch == 3


def test_errors_start_over() -> None:
    h = FetchSessionHandler()
    h.build({("t", 0): 1})
    h.handle_response(ErrorCode.NONE, 42)
    h.build({("t", 0): 1})
    # a wrong epoch: the next fetch is full and closes session 42 (epoch 0 names it)
    assert not h.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    again = h.build({("t", 0): 1})
    assert (again.session_id, again.epoch, list(again.to_send)) == (42, 0, [("t", 0)])
    assert h.handle_response(ErrorCode.NONE, 43)
    h.build({("t", 0): 1})
    # an unknown session: a full fetch without one
    assert not h.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert h.build({("t", 0): 1})[:2] == (0, 0)
    assert h.handle_response(ErrorCode.NONE, 44)
    # a lost connection: full again, closing 44
    h.handle_error()
    assert h.build({("t", 0): 1})[:2] == (44, 0)
    # the broker created no session (its cache is full): full fetches go on
    assert h.handle_response(ErrorCode.NONE, 0)
    assert h.build({("t", 0): 1})[:2] == (0, 0)
    # the broker closed the session (e.g. it was emptied): full again
    assert h.handle_response(ErrorCode.NONE, 45)
    h.build({("t", 0): 1})
    assert h.handle_response(ErrorCode.NONE, 0)
    assert h.build({("t", 0): 1})[:2] == (0, 0)
