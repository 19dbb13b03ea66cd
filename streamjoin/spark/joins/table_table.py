"""The table-table join over history, as the worker runs it (runtime/joins/table_table.py) in the
processing order of `order.py`: its output is the update stream of the joined table.

Each update of either table (a tombstone deletes) meets the other table's current value for its
key: the last update of the other side before it. A result exists for values (l, r) when both
are present (inner), when l is (left), when either is (outer). If one exists after the update,
it is emitted, at the larger of the update's and the other value's timestamps; if none does, a
tombstone is emitted when one existed before (judged from the side's previous value) or when
the other side has a value (Kafka Streams' rule), else nothing. Updates without a key are
skipped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinKind, JoinSpec
from streamjoin.spark.joins.columns import joined
from streamjoin.spark.joins.stream_table import RECORD_COLUMNS
from streamjoin.spark.order import POSITION, after

__all__ = ("result_exists", "table_table_join")


def result_exists(how: JoinKind, left: Column, right: Column) -> Column:
    """Whether values present as given make a result of a `how` table join."""
    if how == "inner":
        return left & right
    if how == "left":
        return left
    return left | right


def _state(side: int) -> Column:
    """The side's update as a struct, on its own rows only."""
    fields = ("value", "topic", "partition", "offset", "timestamp")
    return sf.when(sf.col("side") == side, sf.struct(*fields))


def table_table_join(spec: JoinSpec, left: DataFrame, right: DataFrame) -> DataFrame:
    """JOINED_COLUMNS (tombstones marked) of a table-table join over both tables' updates
    (RECORD_SCHEMA and `pos`)."""
    both = (
        left.select(*RECORD_COLUMNS, sf.lit(0).alias("side"))
        .unionByName(right.select(*RECORD_COLUMNS, sf.lit(1).alias("side")))
        .where(sf.col("key").isNotNull())
    )
    by_key = Window.partitionBy("partition", "key").orderBy(POSITION)
    upto = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = by_key.rowsBetween(Window.unboundedPreceding, -1)
    states = both.select(
        "*",
        sf.last(_state(0), ignorenulls=True).over(upto).alias("l"),
        sf.last(_state(1), ignorenulls=True).over(upto).alias("r"),
        sf.last(_state(0), ignorenulls=True).over(before).alias("l_before"),
        sf.last(_state(1), ignorenulls=True).over(before).alias("r_before"),
    )
    is_left = sf.col("side") == 0
    l_present = sf.coalesce(sf.col("l.value").isNotNull(), sf.lit(False))
    r_present = sf.coalesce(sf.col("r.value").isNotNull(), sf.lit(False))
    own_before = sf.when(is_left, sf.col("l_before.value")).otherwise(sf.col("r_before.value"))
    other_present = sf.when(is_left, r_present).otherwise(l_present)
    before_l = sf.when(is_left, own_before.isNotNull()).otherwise(l_present)
    before_r = sf.when(is_left, r_present).otherwise(own_before.isNotNull())
    exists_after = result_exists(spec.how, l_present, r_present)
    existed = result_exists(spec.how, before_l, before_r)
    other_ts = sf.when(is_left, sf.col("r.timestamp")).otherwise(sf.col("l.timestamp"))
    timestamp = sf.when(other_present, sf.greatest("timestamp", other_ts)).otherwise(
        sf.col("timestamp")
    )
    emitted = states.withColumn("_after", exists_after).where(
        sf.col("_after") | other_present | existed
    )

    def source(state: str, present: Column) -> Column:
        return sf.when(
            present,
            sf.concat_ws(
                ":",
                f"{state}.topic",
                sf.col(f"{state}.partition").cast("string"),
                sf.col(f"{state}.offset").cast("string"),
            ),
        )

    result = sf.col("_after")
    return emitted.select(
        *joined(
            sf.col("key"),
            timestamp,
            sf.col("partition"),
            source("l", result & l_present),
            source("r", result & r_present),
            sf.when(result & l_present, sf.col("l.value")),
            sf.when(result & r_present, sf.col("r.value")),
            after(sf.col(POSITION), 0),
            ~result,
        )
    )
