"""What can go wrong when starting a broker, whichever broker it is."""

from __future__ import annotations

from streamjoin.errors import StreamJoinError

__all__ = ("BrokerBinaryMissing", "BrokerError", "BrokerNotReady", "BrokerPortInUse")


class BrokerError(StreamJoinError):
    """A broker could not be started or stopped."""


class BrokerBinaryMissing(BrokerError):
    """What runs the broker (Tansu's binary; Java or Apache Kafka's jars) is not installed."""


class BrokerPortInUse(BrokerError):
    """The requested port is taken by another process."""


class BrokerNotReady(BrokerError):
    """The broker did not answer Kafka requests in time, or exited while starting."""
