"""Where topic partitions begin and end, and where a consumer group has got to.

The end is the high watermark of a fetch response, never ListOffsets: the embedded broker
answers ListOffsets "latest" wrongly whenever a produce batch held more than one record, while
the fetched watermark is right on every broker. ListOffsets serves only as a starting guess.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import ConfigurationError, StreamJoinError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.kafka.topics import partition_counts

__all__ = ("LogBounds", "committed_offsets", "log_bounds", "topic_partitions")


@dataclass(frozen=True, slots=True, order=True)
class LogBounds:
    """Offsets [start, end) of one partition: its log start and its high watermark."""

    topic: str
    partition: int
    start: int
    end: int


async def topic_partitions(kafka: KafkaTarget, topics: Iterable[str]) -> list[TopicPartition]:
    """Every partition of `topics`, which must exist (asking a broker with auto-creation for
    an unknown topic's metadata would create it)."""
    wanted = sorted(set(topics))
    async with open_admin(kafka) as admin:
        counts = await partition_counts(admin)
    missing = [t for t in wanted if t not in counts]
    if missing:
        raise ConfigurationError(
            f"topic(s) {', '.join(map(repr, missing))} do not exist at {kafka}"
        )
    return [TopicPartition(t, p) for t in wanted for p in range(counts[t])]


async def log_bounds(
    kafka: KafkaTarget, partitions: Sequence[TopicPartition], *, timeout_s: float = 15.0
) -> list[LogBounds]:
    """Log start and fetched high watermark of each partition, in `partitions` order."""
    if not partitions:
        return []
    consumer = connect(kafka).consumer(enable_auto_commit=False, fetch_max_wait_ms=10)
    await consumer.start()
    try:
        consumer.assign(list(partitions))
        starts = await consumer.beginning_offsets(list(partitions))
        await consumer.seek_to_end(*partitions)
        ends: dict[TopicPartition, int] = {}
        try:
            async with asyncio.timeout(timeout_s):
                while len(ends) < len(partitions):
                    await consumer.getmany(timeout_ms=50, max_records=1)
                    for tp in partitions:
                        highwater = consumer.highwater(tp)
                        if highwater is not None:
                            ends[tp] = int(highwater)
        except TimeoutError as exc:
            missing = ", ".join(
                f"{tp.topic}[{tp.partition}]" for tp in partitions if tp not in ends
            )
            raise StreamJoinError(
                f"no fetch response within {timeout_s:.0f}s for {missing}; is the broker at "
                f"{kafka} reachable?"
            ) from exc
    finally:
        await consumer.stop()
    return [LogBounds(tp.topic, tp.partition, int(starts[tp]), ends[tp]) for tp in partitions]


async def committed_offsets(
    kafka: KafkaTarget, group: str, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    """The group's committed offset per partition (0 where it has committed none)."""
    async with open_admin(kafka) as admin:
        committed = await admin.list_consumer_group_offsets(group, partitions=list(partitions))
    found = {tp: meta.offset for tp, meta in committed.items() if meta is not None}
    return {tp: max(0, int(found.get(tp, 0))) for tp in partitions}
