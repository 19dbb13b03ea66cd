"""Send one store's changelog records for one partition in batches, and learn what was confirmed.

Store writes are synchronous, so records go into an aiokafka `BatchBuilder`; a full batch is
handed to the producer at once by a small chain of tasks that keeps batches in order. A flush
seals the open batch (`seal`) and waits for the broker to acknowledge everything sealed up to
that mark (`wait_confirmed`): only then may local state and checkpoints claim those records.
One future per batch instead of one per record keeps the per-record cost low.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from streamjoin.state.errors import ChangelogWriteError

__all__ = ("ChangelogWriter",)


class ChangelogWriter:
    """Batches records for `topic`/`partition` through a producer the caller owns.

    The producer must not have key or value serializers: records are bytes.
    """

    def __init__(self, producer: Any, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._producer = producer
        self._batch: Any = None
        self._count = 0
        self._sealed = 0
        self._chain: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._deliveries: deque[tuple[int, asyncio.Future[Any], int]] = deque()
        self._confirmed: int | None = None

    @property
    def confirmed_offset(self) -> int | None:
        """Offset after the last record the broker confirmed, None before the first confirmation."""
        return self._confirmed

    def append(self, key: bytes, value: bytes | None, timestamp: int | None = None) -> None:
        """Add one record (a None value is a tombstone); a full batch is sent immediately."""
        stamp = int(time.time() * 1000) if timestamp is None else timestamp
        if self._batch is None:
            self._batch = self._producer.create_batch()
        if self._batch.append(key=key, value=value, timestamp=stamp) is None:
            self._seal()
            self._batch = self._producer.create_batch()
            self._batch.append(key=key, value=value, timestamp=stamp)
        self._count += 1

    def seal(self) -> int:
        """Send the open batch; returns a mark for `wait_confirmed` covering all records so far."""
        self._seal()
        return self._sealed

    async def wait_confirmed(self, mark: int) -> int | None:
        """Wait until every batch up to `mark` is acknowledged; returns `confirmed_offset`.

        Raises ChangelogWriteError if any of them failed. Not safe to call concurrently.
        """
        try:
            if self._chain is not None:
                await asyncio.shield(self._chain)
            while self._deliveries and self._deliveries[0][0] <= mark:
                _, delivery, count = self._deliveries[0]
                metadata = await delivery
                self._deliveries.popleft()
                self._confirmed = int(metadata.offset) + count
        except Exception as exc:
            raise ChangelogWriteError(
                f"changelog {self.topic!r} partition {self.partition}: the producer failed to "
                f"deliver records ({type(exc).__name__}: {exc})"
            ) from exc
        return self._confirmed

    async def close(self) -> None:
        """Stop handing batches to the producer; unsent records are dropped: nothing claims them."""
        self._batch = None
        self._count = 0
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for _, delivery, _ in self._deliveries:
            if delivery.done() and not delivery.cancelled():
                delivery.exception()
            else:
                delivery.cancel()
        self._deliveries.clear()

    def _seal(self) -> None:
        if self._count == 0:
            return
        batch, count = self._batch, self._count
        self._batch, self._count = None, 0
        self._sealed += 1
        task = asyncio.get_running_loop().create_task(
            self._enqueue(self._chain, self._sealed, batch, count)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._chain = task

    async def _enqueue(
        self, previous: asyncio.Task[None] | None, index: int, batch: Any, count: int
    ) -> None:
        if previous is not None:
            # Batches reach the producer in order; a failure (or cancellation) ends the chain.
            await asyncio.shield(previous)
        delivery = await self._producer.send_batch(batch, self.topic, partition=self.partition)
        self._deliveries.append((index, delivery, count))
