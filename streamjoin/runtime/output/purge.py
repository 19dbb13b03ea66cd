"""Purge consumed repartition records: after a commit, DeleteRecords up to the committed offset
of each repartition partition this worker reads, as Kafka Streams does, so repartition topics
hold only what is not processed yet.

It runs in the background and never holds up or stops the worker: a broker without
DeleteRecords (or any failure) is logged once, and the topic's retention removes the records.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping

from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget, connect

__all__ = ("RepartitionPurger",)

logger = logging.getLogger(__name__)


class RepartitionPurger:
    def __init__(self, kafka: KafkaTarget, topics: Collection[str]) -> None:
        self._kafka = connect(kafka)
        self._topics = frozenset(topics)
        self._admin: AIOKafkaAdminClient | None = None
        self._purged: dict[TopicPartition, int] = {}
        self._running: asyncio.Task[None] | None = None
        self.disabled = not self._topics
        """True once the broker refused (logged once), or when there is nothing to purge."""

    def after_commit(self, committed: Mapping[TopicPartition, int]) -> None:
        """Start purging up to the committed offsets (skipped while a purge still runs)."""
        if self.disabled or (self._running is not None and not self._running.done()):
            return
        due = {
            tp: offset
            for tp, offset in committed.items()
            if tp.topic in self._topics and offset > self._purged.get(tp, 0)
        }
        if due:
            self._running = asyncio.create_task(self._purge(due), name="purge repartitions")

    async def _purge(self, due: dict[TopicPartition, int]) -> None:
        try:
            if self._admin is None:
                self._admin = self._kafka.admin()
                await self._admin.start()
            await self._admin.delete_records({tp: RecordsToDelete(o) for tp, o in due.items()})
        except Exception as exc:  # noqa: BLE001 - any failure: leave it to the retention
            self.disabled = True
            logger.warning(
                "consumed repartition records are not purged (DeleteRecords failed: %s: %s); "
                "the repartition topics' retention removes them",
                type(exc).__name__,
                exc,
            )
            return
        self._purged.update(due)

    async def close(self, *, wait: bool = True) -> None:
        """Wait for a purge under way, or (not `wait`: the worker failed) stop it: the next
        commit's purge covers its records."""
        if self._running is not None:
            if not wait:
                self._running.cancel()
            await asyncio.gather(self._running, return_exceptions=True)
        if self._admin is not None:
            await self._admin.close()
