"""A join on Spark from input records to output records: the window join, then the joiner
(native columns for a field mapping, Python otherwise), then records as the streaming runtime
writes them (runtime/tasks/output_writer.py): the joined key, the output timestamp, provenance
headers, and the task's partition for records without a key.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.fields import FieldMapping
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.compiler import join_records
from streamjoin.spark.joiner.fields import mapping_value
from streamjoin.spark.joiner.python import apply_python_joiner
from streamjoin.spark.steps import apply_steps

__all__ = ("JoinOptions", "join_results", "output_records")


@dataclass(frozen=True, slots=True)
class JoinOptions:
    drop_late: bool = False
    """Leave out the records the streaming job drops as late (see stream_time.py); by default
    the result is the final answer, late records included."""
    python_joiner: bool = False
    """Run a field mapping as Python, like a joiner function (to compare the two paths)."""
    skip_failures: bool = True
    """Drop results whose joiner or output serde fails (the worker dead-letters them) instead
    of failing the job."""
    streaming: bool = False
    """The inputs are streams: Spark's stream-stream join with watermarks (see compiler.py)."""


def join_results(
    spec: JoinSpec, left: DataFrame, right: DataFrame, options: JoinOptions = JoinOptions()
) -> DataFrame:
    """JOINED_COLUMNS plus `value`, the joiner's output bytes, for every result it kept.
    Each side's filter/map_values steps run first, as in the worker's join task."""
    skip = options.skip_failures
    left = apply_steps(
        left, spec.left_steps, spec.left.value_serde, spec.left_value_serde, skip_failures=skip
    )
    right = apply_steps(
        right, spec.right_steps, spec.right.value_serde, spec.right_value_serde, skip_failures=skip
    )
    joined = join_records(
        spec, left, right, drop_late=options.drop_late, streaming=options.streaming
    )
    # A field mapping reads the declared value types; after map_values it runs as Python.
    if isinstance(spec.joiner, FieldMapping) and not options.python_joiner and not spec.has_steps:
        return joined.withColumn("value", mapping_value(spec, spec.joiner))
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
