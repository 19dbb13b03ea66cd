"""The embedded Kafka-compatible broker (Tansu) for development, the demo and the tests."""

from streamjoin.broker.embedded import (
    BrokerBinaryMissing,
    BrokerError,
    BrokerNotReady,
    BrokerPortInUse,
    EmbeddedBroker,
    find_broker_binary,
)

__all__ = (
    "BrokerBinaryMissing",
    "BrokerError",
    "BrokerNotReady",
    "BrokerPortInUse",
    "EmbeddedBroker",
    "find_broker_binary",
)
