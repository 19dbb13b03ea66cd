"""Fill the benchmarks' input topics fast, before anything is timed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import AIOKafkaProducer

__all__ = ("produce_all",)


async def produce_all(bootstrap: str, records: Iterable[tuple[str, bytes, bytes, int]]) -> None:
    """(topic, key, value, timestamp ms) records, in the given order, acknowledged on return."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=20, max_batch_size=512 * 1024
    )
    await producer.start()
    try:
        pending = []
        for topic, key, value, ts in records:
            pending.append(await producer.send(topic, value, key=key, timestamp_ms=ts))
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
