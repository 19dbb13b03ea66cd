"""Deliver output and dead-letter records through an aiokafka producer.

Tasks produce synchronously while they process; the records wait here until the worker's loop
hands them to the producer (which may make it wait when its buffer is full: back-pressure), and
the commit loop's `flush` confirms them before any input offset is committed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from streamjoin.errors import StreamJoinError
from streamjoin.runtime.sink import OutgoingRecord

__all__ = ("DeliveryError", "ProducerSink")


class DeliveryError(StreamJoinError):
    """The producer could not deliver an output record; nothing after it may be committed."""


class ProducerSink:
    def __init__(self, producer: Any) -> None:
        self._producer = producer
        self._queued: list[OutgoingRecord] = []
        self._in_flight: list[asyncio.Future[Any]] = []
        self.sent: Counter[str] = Counter()
        """Records handed to the producer, by topic."""

    def send(self, record: OutgoingRecord) -> None:
        self._queued.append(record)

    async def drain(self) -> None:
        """Hand queued records to the producer (waits only while its buffer is full)."""
        queued, self._queued = self._queued, []
        send = self._producer.send
        for r in queued:
            delivery = await send(
                r.topic,
                r.value,
                key=r.key,
                partition=r.partition,
                timestamp_ms=r.timestamp,
                headers=r.headers,
            )
            self._in_flight.append(delivery)
            self.sent[r.topic] += 1

    async def flush(self) -> None:
        """Everything sent before this call is acknowledged by the broker, or DeliveryError.

        Records sent while it waits are left to the next flush, so the worker can go on
        processing during a commit.
        """
        await self.drain()
        in_flight, self._in_flight = self._in_flight, []
        for outcome in await asyncio.gather(*in_flight, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise DeliveryError(
                    f"an output record was not delivered ({type(outcome).__name__}: {outcome})"
                ) from outcome
