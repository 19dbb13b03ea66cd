"""The worker's global tables (Kafka Streams' GlobalKTable): every worker reads every partition of
each global topic into its own local store, outside the consumer group.

    tables = GlobalTables(topics, directory, memory, kafka)
    await tables.start()     # restores each store to the topic's end: before any task runs
    ...
    await tables.poll()      # each worker loop round, before the stream records it fetches
    tables.checkpoint()      # at every commit
    await tables.close()

One consumer with a manual assignment of all their partitions reads them: from the store's
checkpoint (only the tail after a restart), to the high watermark seen in fetch answers
(ListOffsets is not trusted, see docs/broker-facts.md). While the worker runs, the updates
fetched so far are applied at the start of each loop round, so a stream record sees every table
update fetched before it; the table is not synchronised with the stream by timestamp (as in Kafka
Streams).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from aiokafka.errors import OffsetOutOfRangeError

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.reader import FETCHER_TURNS
from streamjoin.state.stores.bulk_load import until_compacted
from streamjoin.state.stores.global_store import GlobalStore

__all__ = ("GlobalTables",)

logger = logging.getLogger(__name__)

_MAX_POLL_RECORDS = 10_000
"""Records taken per poll while running: bounds how long applying updates holds the loop."""


class GlobalTables:
    """The global tables of one worker, by topic."""

    def __init__(
        self,
        partitions: Mapping[str, int],
        directory: StateDirectory,
        memory: MemoryBudget,
        kafka: KafkaTarget,
        *,
        client_id: str = "streamjoin-global",
        process: int | None = None,
    ) -> None:
        """`partitions`: each global topic's partition count; `process`: the worker's index
        among its host's `--processes` (each keeps its own copy)."""
        self._partitions = dict(partitions)
        self._process = process
        self._directory = directory
        self._memory = memory
        self._kafka = connect(kafka)
        self._client_id = client_id
        self._stores: dict[str, GlobalStore] = {}
        self._consumer: Any = None
        self.restored_records = 0
        self.restore_seconds = 0.0
        self._started_at = time.monotonic()
        self._caught_up_at: dict[TopicPartition, float] = {}
        """When each partition's copy was last seen at its topic's end (restored, or applied)."""

    def table(self, topic: str) -> GlobalStore:
        return self._stores[topic]

    @property
    def partitions(self) -> dict[str, int]:
        """Each global topic's partition count."""
        return dict(self._partitions)

    def read_lag(self, topic: str, partition: int) -> tuple[int, int] | None:
        """How far the copy of one partition may be behind the topic: in records (to the high
        watermark of the last fetch answer) and in ms since it was last seen at that end (0, 0
        when there); None before any fetch answer."""
        if self._consumer is None:
            return None
        tp = TopicPartition(topic, partition)
        highwater = self._consumer.highwater(tp)
        if highwater is None:
            return None
        now = time.monotonic()
        lag = max(0, highwater - self._stores[topic].positions.get(partition, 0))
        if lag == 0:
            self._caught_up_at[tp] = now
            return 0, 0
        return lag, int((now - self._caught_up_at.get(tp, self._started_at)) * 1000)

    @property
    def stores(self) -> dict[str, GlobalStore]:
        return dict(self._stores)

    async def start(self) -> None:
        """Open the stores and read each topic to its end; returns once all are restored."""
        if not self._partitions:
            return
        for topic in sorted(self._partitions):
            self._stores[topic] = GlobalStore(topic, self._directory, self._memory, self._process)
        self._consumer = self._kafka.consumer(
            client_id=self._client_id,
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=100,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        await self._consumer.start()
        self._consumer.assign(
            [TopicPartition(t, p) for t, n in sorted(self._partitions.items()) for p in range(n)]
        )
        for topic in self._stores:
            await self._seek(topic)
        await self._restore()

    async def _seek(self, topic: str) -> None:
        store = self._stores[topic]
        fresh = []
        for partition in range(self._partitions[topic]):
            tp = TopicPartition(topic, partition)
            position = store.positions.get(partition)
            if position is None:
                fresh.append(tp)
            else:
                self._consumer.seek(tp, position)
        if fresh:
            await self._consumer.seek_to_beginning(*fresh)

    async def _restore(self) -> None:
        started = time.monotonic()
        before = sum(store.applied for store in self._stores.values())
        resumed = {t: bool(s.positions) for t, s in self._stores.items()}
        while await self._behind():
            await self._read(timeout_ms=100, logged=False)
        self.restore_seconds = time.monotonic() - started  # the compaction is logged apart
        for store in self._stores.values():
            store.flush_in_background()  # so that the first commit's checkpoint is quick
        await until_compacted("the global tables", self._stores)
        restored = time.monotonic()
        for topic in self._stores:
            for partition in range(self._partitions[topic]):
                self._caught_up_at[TopicPartition(topic, partition)] = restored
        self.restored_records = sum(store.applied for store in self._stores.values()) - before
        for topic, store in sorted(self._stores.items()):
            logger.info(
                "global table %s: restored %s to %s (%d records read in %.1f s)",
                topic,
                "from its checkpoint" if resumed[topic] else "from the beginning",
                dict(sorted(store.positions.items())),
                store.applied,
                self.restore_seconds,
            )

    async def _behind(self) -> bool:
        """Whether some partition is short of the high watermark of its last fetch answer (or
        has had none); a store ahead of its topic (recreated, or records deleted) is wiped."""
        consumer = self._consumer
        behind = False
        for topic, count in self._partitions.items():
            for partition in range(count):
                tp = TopicPartition(topic, partition)
                highwater = consumer.highwater(tp)
                if highwater is None:
                    behind = True
                    continue
                position = await consumer.position(tp)
                if position > highwater:
                    await self._start_over(
                        topic,
                        f"the store is at offset {position} of partition {partition}, "
                        f"past its end {highwater}",
                    )
                    return True
                behind = behind or position < highwater
        return behind

    async def _start_over(self, topic: str, reason: str) -> None:
        logger.warning("global table %s: %s; restoring from the beginning", topic, reason)
        self._stores[topic].wipe()
        await self._seek(topic)

    async def _read(self, *, timeout_ms: int, logged: bool) -> int:
        try:
            fetched = await self._consumer.getmany(
                timeout_ms=timeout_ms, max_records=_MAX_POLL_RECORDS
            )
        except OffsetOutOfRangeError as exc:
            for tp in exc.args[0]:
                await self._start_over(tp.topic, "its offsets are out of the topic's range")
            return 0
        if fetched:
            # Let aiokafka's fetcher ask for the next records before RocksDB is written, so the
            # broker prepares them meanwhile (as the changelog reader does).
            for _ in range(FETCHER_TURNS):
                await asyncio.sleep(0)
        applied = 0
        now = time.monotonic()
        for tp, records in fetched.items():
            self._stores[tp.topic].apply(tp.partition, records, logged=logged)
            applied += len(records)
            if self._consumer.highwater(tp) == records[-1].offset + 1:
                self._caught_up_at[tp] = now
        return applied

    async def poll(self) -> int:
        """Apply the updates fetched so far (no waiting); returns how many."""
        if self._consumer is None:
            return 0
        return await self._read(timeout_ms=0, logged=True)

    def checkpoint(self) -> None:
        """Make the applied updates durable and record their offsets (at each commit)."""
        for store in self._stores.values():
            store.checkpoint()

    async def close(self) -> None:
        """Stop reading, then checkpoint and close the stores, even when stopping the consumer
        fails: without a broker, aiokafka's stop may raise its fetcher's CancelledError."""
        consumer, self._consumer = self._consumer, None
        try:
            if consumer is not None:
                await consumer.stop()
        finally:
            for store in self._stores.values():
                store.checkpoint()
                store.close()
            self._stores.clear()
