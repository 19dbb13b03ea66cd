"""A join on Spark from input records to output records: the join of its kind (joins/, or the
streaming stream-stream join of compiler.py), then the joiner (native columns for a field
mapping, Python otherwise), then records as the streaming runtime writes them
(runtime/tasks/output_writer.py): the joined key, the output timestamp, provenance headers, and
the task's partition for records without a key; a table join's tombstones without value or
headers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.fields import FieldMapping
from streamjoin.dsl.settings import DEFAULT_MAX_RECORD_BYTES
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.compiler import stream_join_records
from streamjoin.spark.joiner.fields import mapping_value
from streamjoin.spark.joiner.python import apply_python_joiner
from streamjoin.spark.joins.foreign_key import foreign_key_join
from streamjoin.spark.joins.global_table import global_table_join
from streamjoin.spark.joins.stream_table import stream_table_join
from streamjoin.spark.joins.table_table import table_table_join
from streamjoin.spark.joins.windowed import windowed_join
from streamjoin.spark.steps import apply_steps
from streamjoin.spark.stream_static import stream_static_join

__all__ = ("JoinOptions", "admitted", "join_results", "joined_records", "output_records")


@dataclass(frozen=True, slots=True)
class JoinOptions:
    python_joiner: bool = False
    """Run a field mapping as Python, like a joiner function (to compare the two paths)."""
    skip_failures: bool = True
    """Drop results whose joiner or output serde fails, and input records a step, key function
    or serde fails on (the worker dead-letters them), instead of failing the job."""
    streaming: bool = False
    """The inputs are streams: Spark's stream-stream join with watermarks (compiler.py), and a
    table a static snapshot (stream_static.py)."""
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    """The app's limit: a larger input record is refused by the worker's task (dead-lettered)."""


def admitted(spec: JoinSpec, records: DataFrame, side: int, max_record_bytes: int) -> DataFrame:
    """The records of one side that the worker's task admits (runtime/tasks/admission.py): an
    event timestamp (not negative), key and value within `max_record_bytes`, and a key unless
    the side emits non-matches (the left of a left or outer stream join, the right of an outer
    stream-stream one). The others are bad records, dead-lettered before they take a place in
    the order. (A timestamp far ahead of the wall clock is refused too; a backfill, run later,
    cannot tell.)"""
    stream_stream = spec.window is not None
    keyless = (
        spec.how in ("left", "outer") and not spec.emits_table and not spec.is_global,
        spec.how == "outer" and stream_stream,
    )[side]
    size = sf.coalesce(sf.length("key"), sf.lit(0)) + sf.coalesce(sf.length("value"), sf.lit(0))
    condition = (sf.col("timestamp") >= 0) & (size <= max_record_bytes)
    if not keyless:
        condition = condition & sf.col("key").isNotNull()
    return records.where(condition)


def joined_records(
    spec: JoinSpec,
    left: DataFrame,
    right: DataFrame,
    options: JoinOptions,
    spans: tuple[int, int] = (0, 0),
) -> DataFrame:
    """JOINED_COLUMNS of `spec` over the records of the topics it reads (a foreign-key join: its
    two tables). Each stream side's filter/map_values steps run first, as in the worker's task.
    `spans`: for streams of other joins' results, how far after their EVENT_TIME (compiler.py)
    their timestamps may be."""
    skip = options.skip_failures
    left = admitted(spec, left, 0, options.max_record_bytes)
    right = admitted(spec, right, 1, options.max_record_bytes)
    if spec.foreign_key is not None:
        return foreign_key_join(spec, left, right, skip_failures=skip)
    if spec.is_table_table:
        return table_table_join(spec, left, right)
    left = apply_steps(
        left, spec.left_steps, spec.left.value_serde, spec.left_value_serde, skip_failures=skip
    )
    if options.streaming and (spec.is_global or spec.is_stream_table):
        return stream_static_join(spec, left, right, skip_failures=skip)
    if spec.is_global:
        return global_table_join(spec, left, right, skip_failures=skip)
    if spec.is_stream_table:
        return stream_table_join(spec, left, right)
    right = apply_steps(
        right, spec.right_steps, spec.right.value_serde, spec.right_value_serde, skip_failures=skip
    )
    if options.streaming:
        return stream_join_records(spec, left, right, spans)
    return windowed_join(spec, left, right)


def join_results(
    spec: JoinSpec,
    left: DataFrame,
    right: DataFrame,
    options: JoinOptions = JoinOptions(),
    spans: tuple[int, int] = (0, 0),
) -> DataFrame:
    """JOINED_COLUMNS plus `value`, the joiner's output bytes, for every result it kept (null
    for a tombstone)."""
    joined = joined_records(spec, left, right, options, spans)
    fk = spec.foreign_key
    if fk is not None:  # the joiner sees the right table's values, not the response topic's
        spec = replace(spec, right=fk.right_table)
    # A field mapping reads the declared value types; after map_values it runs as Python.
    if isinstance(spec.joiner, FieldMapping) and not options.python_joiner and not spec.has_steps:
        value = mapping_value(spec, spec.joiner)
        return joined.withColumn("value", sf.when(~sf.col("tombstone"), value))
    return apply_python_joiner(spec, joined, skip_failures=options.skip_failures)


def output_records(results: DataFrame) -> DataFrame:
    """OUTPUT_SCHEMA rows for `join_results` rows."""
    sources = sf.array(
        sf.struct(
            sf.lit(LEFT_SOURCE_HEADER).alias("key"),
            sf.col("left_source").cast("binary").alias("value"),
        ),
        sf.struct(
            sf.lit(RIGHT_SOURCE_HEADER).alias("key"),
            sf.col("right_source").cast("binary").alias("value"),
        ),
    )
    return results.select(
        "key",
        "value",
        "timestamp",
        sf.when(sf.col("key").isNull(), sf.col("task_partition")).alias("partition"),
        sf.filter(sources, lambda h: h["value"].isNotNull()).alias("headers"),
    )
