"""Changelog end offsets, read the way the embedded broker gets right, by one long-lived consumer.

ListOffsets (`end_offsets()`) is wrong on the embedded broker whenever a batch held more than one
record; the high watermark in fetch responses is right on every broker. So: seek near the end
(ListOffsets is close enough for a start), fetch once per partition, and take the watermark (the
last stable offset when reading committed records only, as the changelog reader does).

Every read assigns its partitions afresh, so each end comes from a fetch sent after the call
began: a task promoted from standby to active may trust it to cover every write its previous
owner confirmed before giving the task up. The consumer, started at the first read, stays connected
between reads: starting one (bootstrap, metadata) took most of a read's time, on the hand-off
path of a moved task twice (the leader's assignment, then the promotion).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.state.changelog_topics import store_topic
from streamjoin.state.errors import StateError
from streamjoin.state.specs import TaskSpec

__all__ = ("ChangelogEnds", "changelog_end_offset_sums")


class ChangelogEnds:
    """Reads the ends of changelog partitions, one read at a time, until closed."""

    def __init__(
        self,
        bootstrap: KafkaTarget,
        *,
        isolation_level: str = "read_uncommitted",
        timeout_s: float = 10.0,
    ) -> None:
        self._kafka = connect(bootstrap)
        self._committed = isolation_level == "read_committed"
        self._isolation_level = isolation_level
        self._timeout_s = timeout_s
        self._consumer: Any = None
        self._closed = False
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            if self._consumer is not None:
                await self._consumer.stop()
                self._consumer = None

    async def ends(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Partition -> its end, from fetches sent after this call began.

        The changelogs must exist (StateManager or `ensure_changelogs` creates them): asking for
        a missing topic would make a broker with auto-creation create it with a default layout.
        """
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        async with self._lock:
            if self._closed:
                raise StateError("changelog ends asked for after the worker closed its state")
            consumer = self._consumer or await self._start()
            consumer.assign(wanted)  # afresh: no watermark of an earlier read survives
            try:
                await consumer.seek_to_end(*wanted)
                return await self._read(consumer, wanted)
            finally:
                consumer.pause(*wanted)  # no fetching between reads

    async def _start(self) -> Any:
        consumer = self._kafka.consumer(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=10,
            isolation_level=self._isolation_level,
        )
        await consumer.start()
        self._consumer = consumer
        return consumer

    async def sums(self, app_id: str, tasks: Iterable[TaskSpec]) -> dict[str, int]:
        """Task id -> sum of the end offsets of its stores' changelog partitions."""
        partitions = {
            spec.task_id: [
                TopicPartition(store_topic(app_id, s), spec.partition) for s in spec.stores
            ]
            for spec in tasks
        }
        ends = await self.ends(tp for tps in partitions.values() for tp in tps)
        return {task_id: sum(ends[tp] for tp in tps) for task_id, tps in partitions.items()}

    async def _read(self, consumer: Any, wanted: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends: dict[TopicPartition, int] = {}
        try:
            async with asyncio.timeout(self._timeout_s):
                while len(ends) < len(wanted):
                    await consumer.getmany(timeout_ms=10)  # an empty poll takes all of it
                    for tp in wanted:
                        end = (
                            consumer.last_stable_offset(tp)
                            if self._committed
                            else consumer.highwater(tp)
                        )
                        if end is not None and end >= 0:
                            ends[tp] = int(end)
        except TimeoutError as exc:
            missing = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in wanted if tp not in ends)
            raise StateError(
                f"no fetch response within {self._timeout_s:.0f}s for changelog partitions "
                f"{missing}; is the broker reachable?"
            ) from exc
        return ends


async def changelog_end_offset_sums(
    bootstrap: KafkaTarget, app_id: str, tasks: Iterable[TaskSpec], *, timeout_s: float = 10.0
) -> dict[str, int]:
    """Task id -> sum of the end offsets of its stores' changelog partitions, by a consumer of
    its own (for tools; a worker keeps one ChangelogEnds)."""
    reader = ChangelogEnds(bootstrap, timeout_s=timeout_s)
    try:
        return await reader.sums(app_id, tasks)
    finally:
        await reader.close()
