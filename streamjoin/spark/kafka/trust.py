"""Whether a broker's ListOffsets answers can be trusted as the ends of its partitions.

Spark's Kafka connector plans each micro-batch from ListOffsets (latest) answers. The embedded
broker (Tansu) answers them too low after batched produces, so the connector stops short of
records that are there and a query misses pairs without a word (issue 37: 69 of 614 pairs after
one run). streamjoin's own reads plan from fetched high watermarks, which are right on every
broker. A broker is not trusted when it is Tansu (known by its cluster id) or when a ListOffsets
answer for one of the topics differs from the partition's fetched high watermark right now.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamjoin.group.rejoin_pace import TANSU_CLUSTER_ID
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.kafka.watermarks import log_bounds, topic_partitions
from streamjoin.spark.kafka.offsets import run_sync

__all__ = ("untrusted_end_offsets",)


async def _reason(bootstrap: KafkaTarget, topics: list[str]) -> str | None:
    async with open_admin(bootstrap) as admin:
        cluster = await admin.describe_cluster()
    if cluster.get("cluster_id") == TANSU_CLUSTER_ID:
        return "the embedded broker (Tansu) answers ListOffsets too low after batched produces"
    partitions = await topic_partitions(bootstrap, topics)
    bounds = await log_bounds(bootstrap, partitions)
    consumer = connect(bootstrap).consumer(enable_auto_commit=False)
    await consumer.start()
    try:
        listed = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    answers = {(tp.topic, tp.partition): offset for tp, offset in listed.items()}
    for bound in bounds:
        answer = answers.get((bound.topic, bound.partition))
        if answer != bound.end:
            return (
                f"its ListOffsets answer for {bound.topic}[{bound.partition}] ({answer}) is not "
                f"the partition's high watermark ({bound.end})"
            )
    return None


def untrusted_end_offsets(bootstrap: KafkaTarget, topics: Iterable[str]) -> str | None:
    """Why the broker's ListOffsets answers for `topics` cannot be trusted, or None."""
    wanted = sorted(set(topics))
    return run_sync(lambda: _reason(bootstrap, wanted))
