"""Changelog end offsets for the task assignor, read the way the embedded broker gets right.

ListOffsets (`end_offsets()`) is wrong on the embedded broker whenever a batch held more than one
record; the high watermark in fetch responses is right on every broker. So: seek near the end
(ListOffsets is close enough for a start), fetch once per partition, and take the watermark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.state.changelog_topics import store_topic
from streamjoin.state.errors import StateError
from streamjoin.state.specs import TaskSpec

__all__ = ("changelog_end_offset_sums",)


async def changelog_end_offset_sums(
    bootstrap: KafkaTarget, app_id: str, tasks: Iterable[TaskSpec], *, timeout_s: float = 10.0
) -> dict[str, int]:
    """Task id -> sum of the end offsets of its stores' changelog partitions.

    The changelogs must exist (StateManager or `ensure_changelogs` creates them): asking for a
    missing topic would make a broker with auto-creation create it with a default layout.
    """
    specs = list(tasks)
    partitions = {
        spec.task_id: [TopicPartition(store_topic(app_id, s), spec.partition) for s in spec.stores]
        for spec in specs
    }
    wanted = sorted({tp for tps in partitions.values() for tp in tps})
    if not wanted:
        return {spec.task_id: 0 for spec in specs}
    consumer = connect(bootstrap).consumer(
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=10,
    )
    await consumer.start()
    try:
        consumer.assign(wanted)
        await consumer.seek_to_end(*wanted)
        ends: dict[TopicPartition, int] = {}
        try:
            async with asyncio.timeout(timeout_s):
                while len(ends) < len(wanted):
                    await consumer.getmany(timeout_ms=50)
                    for tp in wanted:
                        highwater = consumer.highwater(tp)
                        if highwater is not None:
                            ends[tp] = int(highwater)
        except TimeoutError as exc:
            missing = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in wanted if tp not in ends)
            raise StateError(
                f"no fetch response within {timeout_s:.0f}s for changelog partitions {missing}; "
                "is the broker reachable?"
            ) from exc
    finally:
        await consumer.stop()
    return {task_id: sum(ends[tp] for tp in tps) for task_id, tps in partitions.items()}
