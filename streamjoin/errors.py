"""The errors streamjoin raises on purpose: each one says what is wrong and what to do about it."""

from __future__ import annotations

__all__ = ("ConfigurationError", "ProtocolDecodeError", "StreamJoinError")


class StreamJoinError(Exception):
    """Base of the errors streamjoin raises on purpose; the CLI prints them without a traceback."""


class ConfigurationError(StreamJoinError):
    """The user's input (a scenario file, an option, a topic layout) cannot be used as given."""


class ProtocolDecodeError(StreamJoinError):
    """Bytes received from the broker or another group member do not follow the expected format."""
