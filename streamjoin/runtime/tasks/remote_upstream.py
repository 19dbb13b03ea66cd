"""Where the key_by tasks of other workers stand, for a join behind their repartition topic
(upstream.py): the group's committed offsets and the records after them tell.

Another worker commits a key_by task's input offset only once the records it re-keyed before
it are stored in the repartition topic (at-least-once: after its producer's flush; exactly-once:
in the same transaction). So, for each input partition of the key_by that this worker does not
run, the first record at or after the committed offset is the oldest the key_by may still write
(for an input in time order; none when the offset is the end of the partition), and the
repartition partition's end, read after those offsets, is where everything the key_by wrote
before them has arrived. A join here goes on to the oldest such record once it has fetched its
repartition partition that far.

An admin client and a consumer of its own (no group) look, every `PROBE_INTERVAL_S` while a
join of this worker reads a repartition topic that another worker's key_by tasks write to.
Until the first look has answered, and whenever a key_by task of this worker has left since
(its next owner starts at the committed offset, which the last look did not cover), such a
join waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.tasks.ordering import NO_LIMIT
from streamjoin.runtime.tasks.upstream import Hop, RemoteView

__all__ = ("PROBE_INTERVAL_S", "RemoteUpstream")

logger = logging.getLogger(__name__)

PROBE_INTERVAL_S = 0.5
ANSWER_WITHIN_S = 10.0
"""A look that has not heard from every partition by then is abandoned (the last one stands)."""


@dataclass(frozen=True, slots=True)
class _Look:
    local: frozenset[int]
    """The writer's partitions this worker ran when it looked."""
    view: RemoteView
    ends: dict[TopicPartition, int]
    """Each repartition partition's end, read after the committed offsets."""


class RemoteUpstream:
    def __init__(
        self,
        kafka: KafkaConnection,
        group: str,
        sources: dict[str, tuple[str, ...]],
        partitions: dict[str, int],
        fetched: Callable[[], dict[TopicPartition, int]],
        *,
        read_committed: bool = False,
    ) -> None:
        """`group`: the app's consumer group; `sources`: the topics each writing sub-topology
        reads; `partitions`: its task count; `fetched()`: where this worker's fetching of each
        partition stands."""
        self._kafka = kafka
        self._group = group
        self._sources = sources
        self._partitions = partitions
        self._fetched = fetched
        self._read_committed = read_committed
        self._looks: dict[str, _Look] = {}
        self._wanted: dict[str, tuple[frozenset[int], set[TopicPartition]]] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._admin: AIOKafkaAdminClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._failed_since: float | None = None

    def view(self, hop: Hop, partition: int, local: frozenset[int]) -> RemoteView | None:
        tp = TopicPartition(hop.topic, partition)
        wanted = self._wanted.get(hop.writer)
        if wanted is None or wanted[0] != local:
            wanted = self._wanted[hop.writer] = (local, set())
        wanted[1].add(tp)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="upstream")
        look = self._looks.get(hop.writer)
        if look is None or not look.local <= local:
            return None
        end = look.ends.get(tp)
        fetched = self._fetched().get(tp)
        if end is None or fetched is None or fetched < end:
            return None
        return look.view

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                await self._consumer.stop()
        if self._admin is not None:
            with contextlib.suppress(Exception):
                await self._admin.close()

    async def _run(self) -> None:
        while True:
            wanted, self._wanted = self._wanted, {}
            if wanted:
                try:
                    self._looks.update(await self._look(wanted))
                    self._failed_since = None
                except (KafkaError, OSError, TimeoutError) as exc:
                    self._failed(exc)
            await asyncio.sleep(PROBE_INTERVAL_S)

    def _failed(self, exc: BaseException) -> None:
        """Say so once while looks fail (the broker watch says when the broker is away)."""
        if self._failed_since is None:
            self._failed_since = time.monotonic()
            logger.info("cannot see where other workers' key_by tasks stand yet: %s", exc)

    async def _look(
        self, wanted: dict[str, tuple[frozenset[int], set[TopicPartition]]]
    ) -> dict[str, _Look]:
        """One look for every writing sub-topology in `wanted` (its partitions running here,
        and the repartition partitions this worker reads)."""
        remote = {
            writer: [
                TopicPartition(topic, p)
                for topic in self._sources[writer]
                for p in range(self._partitions[writer])
                if p not in local
            ]
            for writer, (local, _) in wanted.items()
        }
        ends = sorted({tp for _, tps in wanted.values() for tp in tps})
        covered = self._fetched()
        sources = [tp for tps in remote.values() for tp in tps]
        committed = await self._committed_offsets(sources)
        consumer = await self._started()
        asked = self._position(consumer, [*sources, *ends])
        for tp in sources:
            offset = committed.get(tp)
            if offset is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, offset)
        for tp in ends:
            consumer.seek(tp, covered.get(tp, 0))
        try:
            heads = await self._first_records(consumer, [*sources, *ends], asked)
        finally:
            consumer.pause(*consumer.assignment())
        looks = {}
        for writer, (local, tps) in wanted.items():
            oldest = min((heads[tp] for tp in remote[writer] if tp in heads), default=NO_LIMIT)
            # What the join here has not fetched yet is waited for; where nothing follows its
            # position (a transaction marker at most), it has everything.
            waits_to = {
                tp: self._end(consumer, tp) if tp in heads else covered.get(tp, 0) for tp in tps
            }
            caught_up = any(tp not in heads for tp in remote[writer])
            looks[writer] = _Look(local, RemoteView(oldest, covered, caught_up), waits_to)
        return looks

    def _position(self, consumer: AIOKafkaConsumer, wanted: list[TopicPartition]) -> float:
        """Assign `wanted` (anew only when it changed), resume fetching it; returns the time
        from which an answer counts."""
        if set(wanted) != consumer.assignment():
            consumer.assign(wanted)
        consumer.resume(*wanted)
        return time.time() * 1000

    async def _first_records(
        self, consumer: AIOKafkaConsumer, wanted: list[TopicPartition], asked: float
    ) -> dict[TopicPartition, int]:
        """The timestamp of the first record fetched of each partition that has one, once every
        partition has been answered after `asked`."""
        heads: dict[TopicPartition, int] = {}

        def note(batch: dict[TopicPartition, list[Any]]) -> None:
            for tp, records in batch.items():
                if records:
                    heads.setdefault(tp, records[0].timestamp)

        async with asyncio.timeout(ANSWER_WITHIN_S):
            while True:
                note(await consumer.getmany(timeout_ms=100))
                if all((consumer.last_poll_timestamp(tp) or 0) >= asked for tp in wanted):
                    note(await consumer.getmany(timeout_ms=0))  # what that answer brought
                    return heads

    def _end(self, consumer: AIOKafkaConsumer, tp: TopicPartition) -> int:
        end = consumer.last_stable_offset(tp) if self._read_committed else consumer.highwater(tp)
        return int(end or 0)

    async def _committed_offsets(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        if self._admin is None:
            self._admin = self._kafka.admin()
            await self._admin.start()
        found = await self._admin.list_consumer_group_offsets(self._group, partitions=partitions)
        return {
            tp: None if meta is None or meta.offset < 0 else int(meta.offset)
            for tp, meta in found.items()
        }

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            self._consumer = self._kafka.consumer(
                enable_auto_commit=False,
                fetch_max_wait_ms=50,
                max_partition_fetch_bytes=16 * 1024,
                isolation_level="read_committed" if self._read_committed else "read_uncommitted",
            )
            await self._consumer.start()
        return self._consumer
