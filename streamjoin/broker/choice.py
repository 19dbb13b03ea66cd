"""Pick a local broker by name, as the demo, the benchmarks and the test suite let users do."""

from __future__ import annotations

from typing import Final

from streamjoin.broker.base import Broker
from streamjoin.broker.embedded import EmbeddedBroker
from streamjoin.broker.errors import BrokerError
from streamjoin.broker.kafka import KafkaBroker

__all__ = ("BROKER_KINDS", "local_broker")

BROKER_KINDS: Final = ("tansu", "kafka")
"""The embedded Tansu (no JVM) and Apache Kafka (Java 17+, jars from `make kafka-jars`)."""


def local_broker(kind: str, port: int | None = None) -> Broker:
    """A not yet started broker of that kind on 127.0.0.1 (`port=None`: any free port)."""
    if kind == "tansu":
        return EmbeddedBroker(port)
    if kind == "kafka":
        return KafkaBroker(port)
    raise BrokerError(f"unknown broker {kind!r}: choose one of {', '.join(BROKER_KINDS)}")
