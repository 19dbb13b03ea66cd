"""Backfill: run a join over history as one Spark batch job.

The inputs are read with a margin of the window's reach on both sides of the time range (the
partners of any record in range lie within it), and the output keeps the results whose
timestamp lies in the range, so a backfill of [from, to) gives exactly the results with those
timestamps that a backfill of all history would.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts
from streamjoin.spark.archive import path_exists
from streamjoin.spark.inputs import Sources, TimeRange, read_topics
from streamjoin.spark.kafka.io import write_topic
from streamjoin.spark.kafka.offsets import OffsetRange, run_sync
from streamjoin.spark.pipeline import JoinOptions, join_results, output_records

__all__ = ("BackfillJob", "OutputTarget", "backfill", "ensure_output_topic", "write_output")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OutputTarget:
    """Parquet at `path`, or the Kafka topic `topic` at `bootstrap`."""

    path: str | None = None
    topic: str | None = None
    bootstrap: KafkaTarget | None = None
    overwrite: bool = False

    def __post_init__(self) -> None:
        if (self.path is None) == (self.topic is None):
            raise ConfigurationError(
                "give exactly one output: --output PATH or --output-topic NAME"
            )
        if self.topic is not None and not self.bootstrap:
            raise ConfigurationError(f"writing to topic {self.topic!r} needs --bootstrap")


def _reach(spec: JoinSpec) -> int:
    window = spec.window
    return 0 if window is None else max(window.before_ms, window.after_ms)


@dataclass(frozen=True, slots=True)
class BackfillJob:
    records: DataFrame
    """The output records (OUTPUT_SCHEMA), not yet computed."""
    left_input: DataFrame
    left_ranges: list[OffsetRange]
    """The offset ranges of the left topic read from Kafka (empty when archived)."""

    def input_partitions(self) -> int:
        """The partition count of the left input: the task count of the streaming join."""
        if self.left_ranges:
            return max(r.partition for r in self.left_ranges) + 1
        top = self.left_input.agg(sf.max("partition")).collect()[0][0]
        return 1 if top is None else int(top) + 1


def backfill(
    spark: SparkSession,
    spec: JoinSpec,
    sources: Sources,
    time_range: TimeRange | None = None,
    options: JoinOptions | None = None,
) -> BackfillJob:
    """The join of `spec` over `sources`, keeping results with timestamps in `time_range`.

    With `options.drop_late` the inputs are read whole: which records were late depends on
    everything before them in their partition.
    """
    time_range = time_range or TimeRange()
    options = options or JoinOptions()
    read_range = TimeRange() if options.drop_late else time_range.widened(_reach(spec))
    inputs = read_topics(spark, sources, spec.input_topics, read_range)
    left = inputs.frames[spec.left.name]
    results = join_results(spec, left, inputs.frames[spec.right.name], options)
    records = output_records(results.where(time_range.contains(sf.col("timestamp"))))
    left_ranges = [r for r in inputs.kafka_ranges if r.topic == spec.left.name]
    return BackfillJob(records, left, left_ranges)


async def ensure_output_topic(
    bootstrap: KafkaTarget, topic: str, partitions: Callable[[], int]
) -> None:
    """Create `topic` with `partitions()` partitions when it does not exist (an existing one is
    used as it is)."""
    async with open_admin(bootstrap) as admin:
        existing = await partition_counts(admin)
    if topic not in existing:
        await ensure_topics(bootstrap, [TopicSpec(topic, partitions(), purpose="output topic")])


def write_output(job: BackfillJob, target: OutputTarget, spec: JoinSpec) -> None:
    """Write the records to Parquet, or produce them to a topic (created when missing with the
    partition count of the inputs, as the worker creates output topics)."""
    records = job.records
    if target.path is not None:
        if path_exists(records.sparkSession, target.path) and not target.overwrite:
            raise ConfigurationError(f"{target.path} exists; pass --overwrite to replace it")
        records.write.mode("overwrite").parquet(target.path)
        return
    assert target.topic is not None and target.bootstrap is not None
    bootstrap, topic = target.bootstrap, target.topic
    partitions = spec.into.partitions
    count = (lambda: partitions) if partitions else job.input_partitions
    run_sync(lambda: ensure_output_topic(bootstrap, topic, count))
    write_topic(records, bootstrap, topic)
