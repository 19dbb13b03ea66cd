"""Local brokers for development, the demo and the tests: Tansu (embedded) and Apache Kafka."""

from streamjoin.broker.base import Broker
from streamjoin.broker.choice import BROKER_KINDS, local_broker
from streamjoin.broker.embedded import EmbeddedBroker, find_broker_binary
from streamjoin.broker.errors import (
    BrokerBinaryMissing,
    BrokerError,
    BrokerNotReady,
    BrokerPortInUse,
)
from streamjoin.broker.kafka import KafkaBroker

__all__ = (
    "BROKER_KINDS",
    "Broker",
    "BrokerBinaryMissing",
    "BrokerError",
    "BrokerNotReady",
    "BrokerPortInUse",
    "EmbeddedBroker",
    "KafkaBroker",
    "find_broker_binary",
    "local_broker",
)
