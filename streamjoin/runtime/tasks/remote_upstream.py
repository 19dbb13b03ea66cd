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

import aiokafka
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
            for writer, (local, readers) in wanted.items():
                try:
                    self._looks[writer] = await self._look(writer, local, readers)
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
        self, writer: str, local: frozenset[int], readers: set[TopicPartition]
    ) -> _Look:
        remote = [
            aiokafka.TopicPartition(topic, p)
            for topic in self._sources[writer]
            for p in range(self._partitions[writer])
            if p not in local
        ]
        covered = self._fetched()
        committed = await self._committed_offsets(remote)
        consumer = await self._started()
        ends = [aiokafka.TopicPartition(*tp) for tp in sorted(readers)]
        wanted = [*remote, *ends]
        consumer.assign(wanted)
        for tp in remote:
            offset = committed.get(TopicPartition(*tp))
            if offset is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, offset)
        for tp in ends:
            consumer.seek(tp, covered.get(TopicPartition(*tp), 0))
        asked = time.time() * 1000
        heads: dict[aiokafka.TopicPartition, int] = {}
        async with asyncio.timeout(ANSWER_WITHIN_S):
            while True:
                batch = await consumer.getmany(timeout_ms=100, max_records=len(wanted))
                for tp, records in batch.items():
                    if records:
                        heads.setdefault(tp, records[0].timestamp)
                answered = all((consumer.last_poll_timestamp(tp) or 0) >= asked for tp in wanted)
                if answered and all(
                    tp in heads or self._caught_up(consumer, tp, committed) for tp in remote
                ):
                    break
        oldest = min((heads[tp] for tp in remote if tp in heads), default=NO_LIMIT)
        return _Look(
            local,
            RemoteView(oldest, covered),
            {TopicPartition(*tp): self._end(consumer, tp) for tp in ends},
        )

    def _caught_up(
        self,
        consumer: AIOKafkaConsumer,
        tp: aiokafka.TopicPartition,
        committed: dict[TopicPartition, int | None],
    ) -> bool:
        return self._end(consumer, tp) <= (committed.get(TopicPartition(*tp)) or 0)

    def _end(self, consumer: AIOKafkaConsumer, tp: aiokafka.TopicPartition) -> int:
        end = consumer.last_stable_offset(tp) if self._read_committed else consumer.highwater(tp)
        return int(end or 0)

    async def _committed_offsets(
        self, partitions: list[aiokafka.TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        if self._admin is None:
            self._admin = self._kafka.admin()
            await self._admin.start()
        found = await self._admin.list_consumer_group_offsets(self._group, partitions=partitions)
        return {
            TopicPartition(*tp): None if meta is None or meta.offset < 0 else int(meta.offset)
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
