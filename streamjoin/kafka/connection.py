"""The one place streamjoin creates aiokafka clients: a bootstrap address with its security.

Every consumer, producer, admin client and bare client comes from a `KafkaConnection`, so no
path can connect without the TLS and SASL settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from streamjoin.kafka.security import KafkaSecurity

__all__ = ("KafkaConnection", "KafkaTarget", "connect")


@dataclass(frozen=True)
class KafkaConnection:
    """Where the cluster is (`bootstrap`, comma-separated HOST:PORT) and how to authenticate.

    `str()` is the bootstrap address, for messages; the security settings never show there.
    """

    bootstrap: str
    security: KafkaSecurity = field(default_factory=KafkaSecurity)

    def __str__(self) -> str:
        return self.bootstrap

    def _kwargs(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap, **self.security.client_kwargs(), **options}

    def consumer(self, *topics: str, **options: Any) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(*topics, **self._kwargs(options))

    def producer(self, **options: Any) -> AIOKafkaProducer:
        return AIOKafkaProducer(**self._kwargs(options))

    def admin(self, **options: Any) -> AIOKafkaAdminClient:
        return AIOKafkaAdminClient(**self._kwargs(options))

    def client(self, **options: Any) -> AIOKafkaClient:
        return AIOKafkaClient(**self._kwargs(options))


KafkaTarget = KafkaConnection | str
"""What the Kafka helpers take: a connection, or a bare bootstrap address meaning PLAINTEXT
(tests, benchmarks and the local brokers)."""


def connect(target: KafkaTarget) -> KafkaConnection:
    """`target` as a connection (a bare address: PLAINTEXT)."""
    return target if isinstance(target, KafkaConnection) else KafkaConnection(target)
