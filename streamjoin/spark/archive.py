"""Parquet archives of topics, so history outlives Kafka retention.

An archive holds a topic's records as RECORD_SCHEMA rows (key, value, topic, partition, offset,
timestamp in ms, headers). Appending resumes after the last offset archived per partition, so a
periodic `streamjoin archive --append` adds each record once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.spark.kafka.io import read_ranges
from streamjoin.spark.kafka.offsets import OffsetRange, plan_ranges
from streamjoin.spark.records import RECORD_SCHEMA

__all__ = ("archive_topic", "archived_ends", "path_exists", "read_archive")

logger = logging.getLogger(__name__)


def read_archive(
    spark: SparkSession,
    path: str,
    topic: str,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
) -> DataFrame:
    """`topic`'s records in the archive at `path`, with from_ms <= timestamp < to_ms."""
    try:
        frame = spark.read.schema(RECORD_SCHEMA).parquet(path)
    except AnalysisException as exc:
        raise ConfigurationError(f"cannot read the archive of {topic!r} at {path}: {exc}") from None
    frame = frame.where(sf.col("topic") == topic)
    if from_ms is not None:
        frame = frame.where(sf.col("timestamp") >= from_ms)
    if to_ms is not None:
        frame = frame.where(sf.col("timestamp") < to_ms)
    return frame


def path_exists(spark: SparkSession, path: str) -> bool:
    """Whether `path` exists on its file system (local, HDFS, S3...), as Spark sees it."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    file_system = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(file_system.exists(hadoop_path))


def archived_ends(spark: SparkSession, path: str, topic: str) -> dict[int, int]:
    """Partition -> the offset after the last one archived (empty when nothing is)."""
    if not path_exists(spark, path):
        return {}
    rows = (
        read_archive(spark, path, topic)
        .groupBy("partition")
        .agg(sf.max("offset").alias("last"))
        .collect()
    )
    return {int(row["partition"]): int(row["last"]) + 1 for row in rows}


def _resume(ranges: Sequence[OffsetRange], ends: dict[int, int]) -> list[OffsetRange]:
    return [
        OffsetRange(r.topic, r.partition, max(r.start, ends.get(r.partition, r.start)), r.end)
        for r in ranges
    ]


def archive_topic(
    spark: SparkSession, bootstrap: KafkaTarget, topic: str, path: str, *, append: bool
) -> list[OffsetRange]:
    """Write `topic` up to its high watermarks to the archive at `path`; with `append`, only
    what the archive does not hold yet. Returns the ranges written."""
    if not append and path_exists(spark, path):
        raise ConfigurationError(
            f"{path} exists; pass --append to add the records archived since, or choose a new path"
        )
    ranges = _resume(plan_ranges(bootstrap, [topic]), archived_ends(spark, path, topic))
    wanted = [r for r in ranges if r.size]
    if wanted:
        records = read_ranges(spark, bootstrap, wanted)
        records.select(*RECORD_SCHEMA.fieldNames()).write.mode("append").parquet(path)
    logger.info(
        "archived offsets %s of %r to %s",
        [(r.partition, r.start, r.end) for r in wanted],
        topic,
        path,
    )
    return wanted
