"""Which records the streaming job drops as late, computed over history.

A streaming task processes partition p of both topics, each in offset order, always taking the
buffered record with the lowest timestamp (left first on ties). That merge order equals sorting
every record by (running maximum timestamp of its own partition so far, side, offset), so
"stream time when x was processed" (the largest timestamp of a usable record processed up to x)
is a running maximum over that order. A record is late when
t + after (before, for the right side) + grace < stream time, as in runtime/joins/windowed.py.

This models a task whose inputs are both available (the usual case when catching up, and when
producers write in time order); when one side arrives much later than the other the real order
can differ, so an audit calls such records *late-dropped* only as an explanation of a
difference it has already found exactly. The running maxima start at the first record read,
so read partitions from their beginning for an exact answer.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.records import RECORD_SCHEMA

__all__ = ("with_lateness",)


def with_lateness(spec: JoinSpec, left: DataFrame, right: DataFrame) -> tuple[DataFrame, DataFrame]:
    """`left` and `right` (RECORD_SCHEMA) with `stream_time` (when the record was processed)
    and `late` (whether the streaming join dropped it) added."""
    window = spec.window
    assert window is not None, "only windowed joins have late records"
    columns = RECORD_SCHEMA.fieldNames()
    both = left.select(*columns, sf.lit(0).alias("_side")).unionByName(
        right.select(*columns, sf.lit(1).alias("_side"))
    )
    own_partition = (
        Window.partitionBy("_side", "partition")
        .orderBy("offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    task_order = (
        Window.partitionBy("partition")
        .orderBy("_head", "_side", "offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    usable = sf.col("key").isNotNull() & sf.col("value").isNotNull()
    reach = sf.when(sf.col("_side") == 0, window.after_ms).otherwise(window.before_ms)
    marked = (
        both.withColumn("_head", sf.max("timestamp").over(own_partition))
        .withColumn("stream_time", sf.max(sf.when(usable, sf.col("timestamp"))).over(task_order))
        .withColumn(
            "late",
            sf.coalesce(
                usable & (sf.col("timestamp") + reach + window.grace_ms < sf.col("stream_time")),
                sf.lit(False),
            ),
        )
        .drop("_head")
    )
    return (
        marked.where(sf.col("_side") == 0).drop("_side"),
        marked.where(sf.col("_side") == 1).drop("_side"),
    )
