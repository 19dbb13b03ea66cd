"""Open an aiokafka admin client with errors a user can act on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

from streamjoin.errors import StreamJoinError
from streamjoin.kafka.connect_errors import (
    KafkaSecurityError,
    collected_errors,
    explain,
    in_words,
    speaks_tls,
)
from streamjoin.kafka.connection import KafkaConnection, KafkaTarget, connect

__all__ = ("BrokerUnreachable", "open_admin")


class BrokerUnreachable(StreamJoinError):
    """No Kafka broker answers at the bootstrap address."""

    def __init__(self, bootstrap: str, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(
            f"no Kafka broker answers at {bootstrap}{f' ({reason})' if reason else ''}; check "
            "the address (--bootstrap), or start the embedded one with `streamjoin broker`"
        )
        self.bootstrap = bootstrap
        self.timed_out = timed_out
        """Every attempt timed out: a broker may be there, only slow (a refused connection
        is not)."""


@asynccontextmanager
async def open_admin(
    target: KafkaTarget, *, timeout_ms: int = 10_000
) -> AsyncIterator[AIOKafkaAdminClient]:
    """An admin client that is closed on exit. It is the first connection of every command
    and worker, so it says why a connection fails: a TLS or SASL failure raises
    KafkaSecurityError, an unreachable broker BrokerUnreachable."""
    kafka = connect(target)
    admin = kafka.admin(request_timeout_ms=timeout_ms)
    with collected_errors(kafka.bootstrap) as errors:
        try:
            await admin.start()
        except (KafkaConnectionError, KafkaError, OSError) as exc:
            await admin.close()
            await _raise_for(kafka, errors, exc)
    try:
        yield admin
    finally:
        await admin.close()


async def _raise_for(
    kafka: KafkaConnection, errors: list[BaseException], failure: BaseException
) -> NoReturn:
    """The one-line error for a failed first connection: `errors` are the attempts aiokafka
    logged, `failure` what it raised."""
    security = kafka.security
    refused = errors and all(isinstance(e, ConnectionRefusedError) for e in errors)
    tls_listener = not security.uses_tls and not refused and await speaks_tls(kafka.bootstrap)
    message = explain(errors, kafka.bootstrap, security, tls_listener=tls_listener)
    if message is not None:
        raise KafkaSecurityError(message) from failure
    reasons = [in_words(e) for e in errors]
    if not errors and not isinstance(failure, KafkaConnectionError):
        reasons = [in_words(failure)]
    timed_out = all(isinstance(e, TimeoutError | KafkaTimeoutError) for e in errors or [failure])
    raise BrokerUnreachable(
        kafka.bootstrap, ", ".join(dict.fromkeys(reasons)), timed_out=timed_out
    ) from failure
