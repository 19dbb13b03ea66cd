"""Backfill: run joins over history as one Spark batch job.

The joins run with the worker's semantics in the processing order of `order.py`, over the app's
source topics (graph.py: key_by as a shuffle, a chained join together with the joins before it).
The output keeps the results whose timestamp lies in [from, to).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts
from streamjoin.spark.archive import path_exists
from streamjoin.spark.graph import AppJob
from streamjoin.spark.inputs import Sources, TimeRange
from streamjoin.spark.kafka.io import write_topic
from streamjoin.spark.kafka.offsets import run_sync
from streamjoin.spark.pipeline import JoinOptions

__all__ = ("BackfillJob", "OutputTarget", "backfill", "ensure_output_topic", "write_output")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OutputTarget:
    """Parquet at `path` (one directory per join under it when there are several), or the
    Kafka topic `topic` at `bootstrap`."""

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


@dataclass(frozen=True, slots=True)
class BackfillJob:
    job: AppJob
    joins: tuple[JoinSpec, ...]

    def records(self, spec: JoinSpec) -> DataFrame:
        """The output records (OUTPUT_SCHEMA) of `spec`, not yet computed."""
        return self.job.output(spec)


def backfill(
    spark: SparkSession,
    app: App,
    joins: Sequence[JoinSpec],
    sources: Sources,
    *,
    time_range: TimeRange | None = None,
    options: JoinOptions | None = None,
) -> BackfillJob:
    """The joins `joins` of `app` over `sources`, keeping results with timestamps in
    `time_range`."""
    job = AppJob(spark, app, sources, time_range or TimeRange(), options or JoinOptions())
    job.prepare(list(joins))
    return BackfillJob(job, tuple(joins))


async def ensure_output_topic(
    bootstrap: KafkaTarget, topic: str, partitions: Callable[[], int]
) -> None:
    """Create `topic` with `partitions()` partitions when it does not exist (an existing one is
    used as it is)."""
    async with open_admin(bootstrap) as admin:
        existing = await partition_counts(admin)
    if topic not in existing:
        await ensure_topics(bootstrap, [TopicSpec(topic, partitions(), purpose="output topic")])


def output_path(target: OutputTarget, spec: JoinSpec, several: bool) -> str:
    assert target.path is not None
    return f"{target.path.rstrip('/')}/{spec.name}" if several else target.path


def write_output(
    job: BackfillJob, spec: JoinSpec, records: DataFrame, target: OutputTarget
) -> None:
    """Write `spec`'s records to Parquet, or produce them to a topic (created when missing with
    the partition count the workers give it)."""
    if target.path is not None:
        path = output_path(target, spec, len(job.joins) > 1)
        if path_exists(records.sparkSession, path) and not target.overwrite:
            raise ConfigurationError(f"{path} exists; pass --overwrite to replace it")
        records.write.mode("overwrite").parquet(path)
        return
    assert target.topic is not None and target.bootstrap is not None
    bootstrap, topic = target.bootstrap, target.topic
    count = job.job.partitions(spec.into.name)
    run_sync(lambda: ensure_output_topic(bootstrap, topic, lambda: count))
    write_topic(records, bootstrap, topic)
