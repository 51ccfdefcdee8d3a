"""Exceptions raised by the protocol layer, split by who is at fault.

A peer's bad bytes raise a :class:`RemoteProtocolError` subclass: the caller logs it and closes the
connection (or answers with the carried Kafka error code). Misuse by our own code raises
:class:`LocalProtocolError`. Any other exception escaping a decoder is a bug; the property and fuzz
tests check that none does.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every exception the protocol package raises on purpose."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that do not follow the Kafka protocol."""

    #: The Kafka error code that best answers this fault, when an answer is possible.
    error_code: int = 42  # INVALID_REQUEST


class FrameTooLarge(RemoteProtocolError):
    """A size prefix above the configured maximum frame size (or negative)."""

    def __init__(self, size: int, max_size: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the maximum of {max_size}")
        self.size = size
        self.max_size = max_size


class MalformedMessage(RemoteProtocolError):
    """A frame whose contents cannot be decoded with the schema it claims."""


class UnsupportedVersion(RemoteProtocolError):
    """An API key or version this side has no schema for."""

    error_code = 35  # UNSUPPORTED_VERSION

    def __init__(self, api_key: int, api_version: int) -> None:
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version


class CorruptRecord(RemoteProtocolError):
    """A record batch or message set that fails its size, magic or CRC checks."""

    error_code = 2  # CORRUPT_MESSAGE


class InvalidRecord(RemoteProtocolError):
    """A record batch that is well formed but breaks a rule (offsets, counts, control flags)."""

    error_code = 87  # INVALID_RECORD


class UnsupportedCompression(RemoteProtocolError):
    """A compression codec id that does not exist."""

    error_code = 76  # UNSUPPORTED_COMPRESSION_TYPE


class DecompressionLimitExceeded(RemoteProtocolError):
    """Decompressed data would exceed the allowed size (a compression bomb, or a lie)."""

    error_code = 2  # CORRUPT_MESSAGE


class LocalProtocolError(ProtocolError):
    """Our own code asked the protocol layer for something impossible."""
