"""Open an aiokafka admin client with errors a user can act on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError

from streamjoin.errors import StreamJoinError

__all__ = ("BrokerUnreachable", "open_admin")


class BrokerUnreachable(StreamJoinError):
    """No Kafka broker answers at the bootstrap address."""

    def __init__(self, bootstrap: str, cause: BaseException) -> None:
        super().__init__(
            f"cannot reach a Kafka broker at {bootstrap} ({type(cause).__name__}: {cause}); "
            "check the address, or start the embedded one with `streamjoin broker`"
        )
        self.bootstrap = bootstrap


@asynccontextmanager
async def open_admin(
    bootstrap: str, *, timeout_ms: int = 10_000
) -> AsyncIterator[AIOKafkaAdminClient]:
    """An admin client that is closed on exit; an unreachable broker raises BrokerUnreachable."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    try:
        await admin.start()
    except (KafkaConnectionError, KafkaError, OSError) as exc:
        await admin.close()
        raise BrokerUnreachable(bootstrap, exc) from exc
    try:
        yield admin
    finally:
        await admin.close()
