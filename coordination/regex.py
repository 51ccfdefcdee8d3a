"""Regular expressions as Kafka's coordinators read them: RE2 syntax (Kafka uses RE2/J), always
matched against the whole name. KIP-848's ``subscribed_topic_regex`` and KIP-1152's
transactional id patterns."""

from __future__ import annotations

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class InvalidRegex(ValueError):
    """A pattern RE2 refuses; the message is RE2's reason."""


def _any_byte_escape(pattern: str) -> bool:
    """Whether ``pattern`` uses ``\\C`` (any byte): RE2 has it, RE2/J does not."""
    escaped = False
    for char in pattern:
        if escaped:
            if char == "C":
                return True
            escaped = False
        elif char == "\\":
            escaped = True
    return False


def compile_re2(pattern: str) -> re2._Regexp:
    """``pattern`` compiled (match with ``fullmatch``); raises :class:`InvalidRegex`, for what
    RE2/J refuses too."""
    if _any_byte_escape(pattern):
        raise InvalidRegex(f"invalid escape sequence: \\C in {pattern}")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise InvalidRegex(detail) from None
