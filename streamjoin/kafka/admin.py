"""Open an aiokafka admin client with errors a user can act on."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError

from streamjoin.errors import StreamJoinError

__all__ = ("BrokerUnreachable", "open_admin")


class BrokerUnreachable(StreamJoinError):
    """No Kafka broker answers at the bootstrap address."""

    def __init__(self, bootstrap: str, reason: str) -> None:
        super().__init__(
            f"no Kafka broker answers at {bootstrap}{f' ({reason})' if reason else ''}; check "
            "the address (--bootstrap), or start the embedded one with `streamjoin broker`"
        )
        self.bootstrap = bootstrap


def _in_words(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, OSError) and error.errno and error.errno > 0:
        return os.strerror(error.errno).lower()
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    if isinstance(error, KafkaError) and error.args:
        return str(error.args[0])  # its str() repeats the class name
    return str(error) or type(error).__name__


@contextmanager
def _connect_errors(bootstrap: str) -> Iterator[list[str]]:
    """Collect, instead of logging, aiokafka's "Unable connect to" errors for `bootstrap`'s
    hosts: the one-line BrokerUnreachable says the same once, in words."""
    hosts = {address.strip() for address in bootstrap.split(",")}
    found: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg.startswith("Unable connect to") and len(args) == 3:
            host, port, error = args
            if f"{host}:{port}" in hosts and isinstance(error, BaseException):
                found.append(_in_words(error))
                return False
        return True

    client_log = logging.getLogger("aiokafka")
    client_log.addFilter(keep)
    try:
        yield found
    finally:
        client_log.removeFilter(keep)


@asynccontextmanager
async def open_admin(
    bootstrap: str, *, timeout_ms: int = 10_000
) -> AsyncIterator[AIOKafkaAdminClient]:
    """An admin client that is closed on exit; an unreachable broker raises BrokerUnreachable."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    with _connect_errors(bootstrap) as reasons:
        try:
            await admin.start()
        except (KafkaConnectionError, KafkaError, OSError) as exc:
            await admin.close()
            reason = ", ".join(dict.fromkeys(reasons))
            if not reasons and not isinstance(exc, KafkaConnectionError):
                reason = _in_words(exc)
            raise BrokerUnreachable(bootstrap, reason) from exc
    try:
        yield admin
    finally:
        await admin.close()
