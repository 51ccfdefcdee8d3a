"""The client side of incremental fetch sessions (KIP-227; Kafka's ``FetchSessionHandler``),
sans-IO: what the next Fetch request to one broker carries, and what its response means for
the session.

Per broker, a fetcher keeps one :class:`FetchSessionHandler`. Before each fetch it passes every
partition it wants with its fetch parameters to :meth:`FetchSessionHandler.build`, which
answers the request's session id and epoch, the partitions to send (all of them in a full
fetch; in an incremental one only those new to the session or whose parameters changed) and the
partitions to forget. :meth:`~FetchSessionHandler.handle_response` then moves the session on (a
new session id after a full fetch, the next epoch after an incremental one) or starts over after
an error; :meth:`~FetchSessionHandler.handle_error` after a failed request (the next fetch is
full and closes the session). Partitions absent from an incremental response have nothing new.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from protocol.error_codes import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 0x7FFFFFFF

#: a partition (e.g. (topic, index))
K = TypeVar("K", bound=Hashable)
#: its fetch parameters (opaque here: compared for changes)
V = TypeVar("V")


class FetchRequestData(NamedTuple, Generic[K, V]):
    """What the next Fetch request carries."""

    session_id: int
    epoch: int
    #: partition -> its fetch parameters, in order
    to_send: dict[K, V]
    #: partitions the session should drop (incremental fetches only)
    to_forget: list[K]

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler(Generic[K, V]):
    """One broker's fetch session, seen from the fetching side (see the module docstring)."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        #: what the broker's session holds: partition -> parameters last sent
        self.session_partitions: dict[K, V] = {}

    def build(self, wanted: Mapping[K, V]) -> FetchRequestData[K, V]:
        """The next request for ``wanted`` (partition -> fetch parameters)."""
        if self.epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self.session_partitions = dict(wanted)
            return FetchRequestData(self.session_id, self.epoch, dict(wanted), [])
        session = self.session_partitions
        to_send: dict[K, V] = {}
        to_forget = [key for key in session if key not in wanted]
        for key in to_forget:
            del session[key]
        for key, data in wanted.items():
            if session.get(key, _MISSING) != data:
                session[key] = data
                to_send[key] = data
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Moves the session on after a response; False when the response must be ignored (a
        session error: the next fetch is full)."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.epoch = INITIAL_EPOCH  # close this session, ask for a new one
            return False
        if self.epoch in (INITIAL_EPOCH, FINAL_EPOCH) or session_id == INVALID_SESSION_ID:
            # a full fetch's answer (a new session, or none); or the broker closed the session
            self.session_id = session_id
            self.epoch = INITIAL_EPOCH if session_id == INVALID_SESSION_ID else 1
            return True
        self.epoch = 1 if self.epoch == _INT32_MAX else self.epoch + 1
        return True

    def handle_error(self) -> None:
        """The request failed (no answer): the next fetch is full and closes the session."""
        self.epoch = INITIAL_EPOCH


_MISSING: Any = object()
