"""What the streaming job had done with each input record when the audit ran: processed or not
(its offset against the consumer group's committed offset), and dropped as late or not."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.watermarks import committed_offsets
from streamjoin.spark.kafka.offsets import OffsetRange, run_sync
from streamjoin.spark.records import source_id

__all__ = ("source_status", "task_stream_times")


def source_status(
    spark: SparkSession,
    bootstrap: KafkaTarget | None,
    group: str,
    ranges: Sequence[OffsetRange],
    marked: tuple[DataFrame, DataFrame],
) -> DataFrame:
    """One row per input record: source ("topic:partition:offset"), partition, timestamp,
    usable (key and value set), late, processed. Records read from archives count as
    processed (there is no committed offset to compare with)."""
    partitions = [TopicPartition(r.topic, r.partition) for r in ranges]
    committed: dict[TopicPartition, int] = {}
    if bootstrap and partitions:
        committed = run_sync(lambda: committed_offsets(bootstrap, group, partitions))
    progress = spark.createDataFrame(
        [(tp.topic, tp.partition, offset) for tp, offset in committed.items()],
        "topic string, partition int, committed long",
    )
    left, right = marked
    both = left.unionByName(right)
    tagged = both.select(
        source_id(both).alias("source"),
        "topic",
        "partition",
        "offset",
        "timestamp",
        (sf.col("key").isNotNull() & sf.col("value").isNotNull()).alias("usable"),
        "late",
    )
    joined = tagged.join(sf.broadcast(progress), ["topic", "partition"], "left")
    return joined.select(
        "source",
        "partition",
        "timestamp",
        "usable",
        "late",
        (sf.col("committed").isNull() | (sf.col("offset") < sf.col("committed"))).alias(
            "processed"
        ),
    )


def task_stream_times(status: DataFrame) -> DataFrame:
    """task_partition -> task_stream_time: the largest timestamp of a usable record the task
    had processed by its committed offsets."""
    return (
        status.where(sf.col("usable") & sf.col("processed"))
        .groupBy(sf.col("partition").alias("task_partition"))
        .agg(sf.max("timestamp").alias("task_stream_time"))
    )
