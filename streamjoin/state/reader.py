"""One consumer that reads every changelog partition a worker restores or tails.

Restoring actives and standbys share it: each partition is tracked with a sink (the store that
applies its records). A partition is read from the sink's start offset (None: the beginning)
and the sink learns, after every poll, its position and the ends seen in fetch responses: the
high watermark, and the last stable offset (the same unless reading committed records only)
(ListOffsets is not trusted; see docs/broker-facts.md). A start offset past the end, or out of the
broker's range, makes the sink reset (wipe) and reading start over from the beginning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka.errors import KafkaError, OffsetOutOfRangeError

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.aiokafka_internals import release_fetched
from streamjoin.kafka.connection import KafkaTarget, connect

__all__ = ("FETCHER_TURNS", "ChangelogReader", "ChangelogSink", "ReaderConfig")

logger = logging.getLogger(__name__)

FETCHER_TURNS = 3
"""Event loop turns aiokafka's fetcher takes to send the next fetch request of a partition just
drained: waking its routine, starting its task and sending."""


class ChangelogSink(Protocol):
    """What the reader needs from whoever applies a partition's records."""

    def start_offset(self) -> int | None:
        """Where to (re)start reading; None for the beginning of the partition."""

    def apply(self, records: list[Any]) -> None:
        """Apply records in offset order (synchronously)."""

    def progress(self, position: int, highwater: int, stable: int) -> None:
        """Everything before `position` is applied; the partition's records end at
        `highwater`, its committed ones at `stable` (read_committed: records of a transaction
        not yet resolved lie between; a reader's position passes them once it is)."""

    def reset(self, reason: str) -> None:
        """Local data cannot continue from the start offset: drop it, reading restarts at 0."""

    def fail(self, error: BaseException) -> None:
        """Reading this partition failed for good; the reader no longer tracks it."""


@dataclass(frozen=True, slots=True)
class ReaderConfig:
    fetch_max_wait_ms: int = 100
    """How long the broker may hold a fetch with no data: bounds how late an empty or
    caught-up changelog is recognised as restored."""
    max_partition_fetch_bytes: int = 4 * 1024 * 1024
    poll_timeout_ms: int = 100
    max_poll_records: int = 10_000
    """Records taken from one partition per poll: bounds how long a restore holds the event
    loop at a time, and lets small restores finish while big ones go on."""
    retry_backoff_s: float = 0.5
    client_id: str = "streamjoin-state"
    isolation_level: str = "read_uncommitted"
    """read_committed under exactly-once: records of aborted transactions are never restored,
    and an open transaction's records are not read until it commits."""


class ChangelogReader:
    """Reads tracked changelog partitions in a background task until closed."""

    def __init__(self, bootstrap: KafkaTarget, config: ReaderConfig | None = None) -> None:
        self.config = config or ReaderConfig()
        self._kafka = connect(bootstrap)
        self._sinks: dict[TopicPartition, ChangelogSink] = {}
        self._fresh: set[TopicPartition] = set()
        """Partitions (re)tracked since the last assignment: records fetched for them predate
        their sink and are dropped (they are fetched again from the sink's start offset)."""
        self._reassign = False
        self._wakeup = asyncio.Event()
        self._consumer: Any = None
        self._loop_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        config = self.config
        self._consumer = self._kafka.consumer(
            client_id=config.client_id,
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=config.fetch_max_wait_ms,
            max_partition_fetch_bytes=config.max_partition_fetch_bytes,
            isolation_level=config.isolation_level,
        )
        await self._consumer.start()
        self._loop_task = asyncio.get_running_loop().create_task(
            self._run(), name="changelog-reader"
        )

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        self._sinks.clear()

    def track(self, topic: str, partition: int, sink: ChangelogSink) -> None:
        """Start reading a partition into `sink` (replacing any sink it had)."""
        tp = TopicPartition(topic, partition)
        self._sinks[tp] = sink
        self._fresh.add(tp)
        self._changed()

    def untrack(self, topic: str, partition: int) -> None:
        """Stop reading a partition. It is paused, not unassigned, so that the others keep their
        fetched data; the next assignment drops it."""
        tp = TopicPartition(topic, partition)
        if self._sinks.pop(tp, None) is None:
            return
        self._fresh.discard(tp)
        if self._consumer is not None and tp in self._consumer.assignment():
            release_fetched(self._consumer, [tp])  # a pause drops it, leaving garbage
            self._consumer.pause(tp)

    def _changed(self) -> None:
        self._reassign = True
        self._wakeup.set()

    async def _run(self) -> None:
        while True:
            if not self._sinks:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                if self._reassign:
                    await self._assign()
                await self._poll()
            except KafkaError as exc:
                logger.warning(
                    "changelog reader: %s; retrying in %.1fs", exc, self.config.retry_backoff_s
                )
                self._reassign = True  # start over from the sinks' positions
                await asyncio.sleep(self.config.retry_backoff_s)
            except Exception as exc:
                logger.exception("changelog reader failed; every restoring or standby task stops")
                for tp, sink in list(self._sinks.items()):
                    self.untrack(tp.topic, tp.partition)
                    sink.fail(exc)

    async def _assign(self) -> None:
        """Assign every tracked partition afresh and seek each to its sink's start offset."""
        self._reassign = False
        self._fresh.clear()
        release_fetched(self._consumer)  # assign() drops them, leaving garbage
        self._consumer.assign(list(self._sinks))
        from_beginning = []
        for tp, sink in self._sinks.items():
            start = sink.start_offset()
            if start is None:
                from_beginning.append(tp)
            else:
                self._consumer.seek(tp, start)
        if from_beginning:
            await self._consumer.seek_to_beginning(*from_beginning)

    async def _poll(self) -> None:
        consumer = self._consumer
        try:
            fetched = await self._fetch()
        except OffsetOutOfRangeError as exc:
            for tp, offset in exc.args[0].items():
                await self._restart(
                    tp, f"local state is at offset {offset}, outside the changelog's range"
                )
            return
        if fetched:
            # Before writing to RocksDB, let aiokafka's fetcher send the next request for each
            # partition just drained, so that the broker prepares it meanwhile: waking its
            # routine, starting its task and sending take three turns of the event loop.
            for _ in range(FETCHER_TURNS):
                await asyncio.sleep(0)
        for tp, records in fetched.items():
            sink = self._sinks.get(tp)
            if sink is not None and records and tp not in self._fresh:
                self._guarded(tp, sink, sink.apply, records)
                await asyncio.sleep(0)  # the worker's other tasks run between partitions
        for tp, sink in list(self._sinks.items()):
            if tp in self._fresh or self._sinks.get(tp) is not sink:
                continue  # not assigned yet, or its task stopped reading meanwhile
            highwater = consumer.highwater(tp)
            stable = (
                consumer.last_stable_offset(tp)
                if self.config.isolation_level == "read_committed"
                else highwater
            )
            if highwater is None or highwater < 0 or stable is None or stable < 0:
                continue
            position = await consumer.position(tp)
            if position > highwater:
                # Tansu answers a fetch past the end with no records; Apache Kafka refuses it
                # (OffsetOutOfRange, above).
                await self._restart(
                    tp,
                    f"local state is at offset {position}, outside the changelog's range "
                    f"(past its end {highwater})",
                )
            else:
                self._guarded(tp, sink, sink.progress, position, highwater, stable)

    async def _fetch(self) -> dict[TopicPartition, list[Any]]:
        """Fetched records, at most `max_poll_records` from each partition that has some.

        aiokafka decodes records lazily, as many as asked for, so the cap bounds how long one
        poll holds the event loop. Under a cap it serves partitions in a fixed order, so each
        other partition is asked separately: a busy one must not starve the rest.
        """
        cap = self.config.max_poll_records
        fetched: dict[TopicPartition, list[Any]] = await self._consumer.getmany(
            timeout_ms=self.config.poll_timeout_ms, max_records=cap
        )
        for tp in list(self._sinks):
            if tp not in fetched and tp not in self._fresh:
                fetched.update(await self._consumer.getmany(tp, timeout_ms=0, max_records=cap))
        return fetched

    async def _restart(self, tp: TopicPartition, reason: str) -> None:
        sink = self._sinks.get(tp)
        if sink is None:
            return
        if self._guarded(tp, sink, sink.reset, reason):
            await self._consumer.seek_to_beginning(tp)

    def _guarded(self, tp: TopicPartition, sink: ChangelogSink, call: Any, *args: Any) -> bool:
        """Run a sink callback; a failure ends tracking of that partition only."""
        try:
            call(*args)
        except Exception as exc:
            logger.exception("changelog %s partition %d: its store failed", tp.topic, tp.partition)
            if self._sinks.get(tp) is sink:
                self.untrack(tp.topic, tp.partition)
            sink.fail(exc)
            return False
        return True
