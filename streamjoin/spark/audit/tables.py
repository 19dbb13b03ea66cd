"""Which keys of a table join's output end where the recomputation ends.

A table-table or foreign-key join's output is the update stream of a table. The last value per
key follows from the two tables alone; the updates in between depend on how the two sides'
updates interleaved at the workers (for a foreign-key join, through its subscription and
response topics, a round trip a recomputation cannot time). So a difference in a key whose last
value agrees is `order_dependent`; one in a key whose last value differs is a failure.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.audit.values import canonical_values
from streamjoin.spark.inputs import TimeRange
from streamjoin.spark.order import POSITION

__all__ = ("final_values_agree",)


def final_values_agree(
    spec: JoinSpec,
    results: DataFrame,
    output: DataFrame,
    time_range: TimeRange,
) -> DataFrame:
    """(i_key, final_ok) for every key of either side: whether the last value in range is the
    same (a tombstone and no record at all count as the same: no row)."""
    in_range = time_range.contains(sf.col("timestamp"))
    expected = (
        results.where(in_range)
        .groupBy(sf.col("key").alias("i_key"))
        .agg(sf.max_by("value", POSITION).alias("value"))
    )
    order = sf.struct("partition", "offset")
    written = (
        output.where(in_range)
        .groupBy(sf.col("key").alias("i_key"))
        .agg(sf.max_by("value", order).alias("value"))
    )
    mine = canonical_values(spec, expected).select("i_key", sf.col("canon").alias("e"))
    theirs = canonical_values(spec, written).select("i_key", sf.col("canon").alias("w"))
    both = mine.join(theirs, "i_key", "full_outer")
    return both.select("i_key", sf.col("e").eqNullSafe(sf.col("w")).alias("final_ok"))
