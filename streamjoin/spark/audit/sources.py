"""How far the workers had got when the audit ran: the consumer group's committed offsets on the
topics the join's results come from, and whether it had caught up with the internal topics in
between (repartition topics, the outputs of the joins before it, a foreign-key join's
subscription and response topics)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from streamjoin.assignment.model import TopicPartition
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import partition_counts
from streamjoin.kafka.watermarks import committed_offsets, log_bounds
from streamjoin.spark.kafka.offsets import run_sync

__all__ = ("committed_frame", "internal_topics", "lagging")


def committed_frame(
    spark: SparkSession,
    bootstrap: KafkaTarget | None,
    group: str,
    partitions: Sequence[tuple[str, int]],
) -> DataFrame:
    """(topic, partition, committed): the group's committed offset of each partition read from
    Kafka (none for archived topics: their records count as processed)."""
    tps = [TopicPartition(t, p) for t, p in partitions]
    found: dict[TopicPartition, int] = {}
    if bootstrap and tps:
        found = run_sync(lambda: committed_offsets(bootstrap, group, tps))
    return spark.createDataFrame(
        [(tp.topic, tp.partition, offset) for tp, offset in found.items()],
        "topic string, partition int, committed long",
    )


def internal_topics(app: App, spec: JoinSpec) -> list[str]:
    """The internal topics the workers pass the join's inputs through, transitively."""
    written = {s.into.name: s for s in app.joins}
    rekeyed = {r.topic.name: r for r in app.repartitions}
    found: dict[str, None] = {}

    def visit(join: JoinSpec) -> None:
        fk = join.foreign_key
        topics = [join.left.name, join.right.name]
        if fk is not None:
            found[fk.subscription.name] = found[fk.response.name] = None
            topics = [fk.left_table.name, fk.right_table.name]
        for name in topics:
            topic = name
            while topic in rekeyed:
                found[topic] = None
                topic = rekeyed[topic].source.name
            if topic in written:
                found[topic] = None
                visit(written[topic])

    visit(spec)
    return list(found)


def lagging(bootstrap: KafkaTarget | None, group: str, topics: list[str]) -> dict[str, int]:
    """Internal topic -> records the group has not committed yet (topics without any left
    out)."""
    if not bootstrap or not topics:
        return {}

    async def behind() -> dict[str, int]:
        async with open_admin(bootstrap) as admin:
            counts = await partition_counts(admin)
        tps = [TopicPartition(t, p) for t in topics if t in counts for p in range(counts[t])]
        if not tps:
            return {}
        bounds = await log_bounds(bootstrap, tps)
        committed = await committed_offsets(bootstrap, group, tps)
        lag: dict[str, int] = {}
        for tp, bound in zip(tps, bounds, strict=True):
            done = max(committed.get(tp, bound.start), bound.start)
            if bound.end > done:
                lag[tp.topic] = lag.get(tp.topic, 0) + bound.end - done
        return lag

    return run_sync(behind)
