"""A windowed stream-stream join as Spark's streaming stream-stream join, with the worker's
window (streamjoin/runtime/joins/windowed.py) as its predicate:

    same key, same partition (a streaming task joins partition p of both topics),
    right.ts in [left.ts - before, left.ts + after] (inclusive), output ts = the larger one.

Each input gets an event-time column with a watermark as far behind as its records may still
find partners (the window's reach on the other side, plus grace), and the window becomes a
time-range condition on those columns, so Spark drops records behind the watermark, emits a
left/outer non-match once the watermark has passed its window, and evicts state as the workers'
windows close. Null keys never match (left and outer joins emit them as non-matches); null
values are skipped, as the streaming join skips them. (The batch join, with the worker's exact
rules for late records, is joins/windowed.py.)
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.joins.columns import joined
from streamjoin.spark.records import source_id

__all__ = ("stream_join_records",)

_SPARK_HOW = {"inner": "inner", "left": "left_outer", "outer": "full_outer"}


def _side(frame: DataFrame, prefix: str, watermark_ms: int) -> DataFrame:
    """The columns of one side that the join needs. A stream keeps them in Spark's join state,
    every row until its window closes, so it carries them lean: the event time only as the
    watermarked timestamp (`_time`), and the offset instead of the provenance string (made
    after the join, `_source_after_join`)."""
    # Spark's streaming join finds null keys equal (its state is a hash table on the key), so
    # a null key is matched as a key of its own that nothing on the other side has.
    alone = sf.concat(sf.lit(f"\x00{prefix}:").cast("binary"), source_id(frame).cast("binary"))
    return (
        frame.where(sf.col("value").isNotNull())
        .select(
            sf.col("key").alias(f"{prefix}_key"),
            sf.coalesce(sf.col("key"), alone).alias(f"{prefix}_match"),
            sf.col("value").alias(f"{prefix}_value"),
            sf.col("partition").alias(f"{prefix}_partition"),
            sf.col("offset").alias(f"{prefix}_offset"),
            sf.timestamp_millis("timestamp").alias(f"{prefix}_time"),
        )
        .withWatermark(f"{prefix}_time", f"{watermark_ms} milliseconds")
    )


def _source_after_join(prefix: str, topic: str) -> Column:
    """`source_id` of a side's record from its partition and offset (its topic is the one the
    side reads; no offset for a re-keyed record); null for the side a non-match lacks."""
    partition = sf.col(f"{prefix}_partition")
    return sf.when(
        partition.isNotNull(),
        sf.concat_ws(
            ":",
            sf.lit(topic),
            partition.cast("string"),
            sf.col(f"{prefix}_offset").cast("string"),
        ),
    )


def _interval(ms: int) -> Column:
    return sf.expr(f"INTERVAL {ms} MILLISECONDS")


def stream_join_records(spec: JoinSpec, left: DataFrame, right: DataFrame) -> DataFrame:
    """JOINED_COLUMNS of `spec` over the streams of its two topics (RECORD_SCHEMA), as Spark's
    stream-stream join (no place in the processing order: `pos` null)."""
    window = spec.window
    assert window is not None, f"join {spec.name!r} has no window"
    grace = window.grace_ms
    lhs = _side(left, "l", window.after_ms + grace)
    rhs = _side(right, "r", window.before_ms + grace)
    in_window = (rhs["r_time"] >= lhs["l_time"] - _interval(window.before_ms)) & (
        rhs["r_time"] <= lhs["l_time"] + _interval(window.after_ms)
    )
    condition = (
        (lhs["l_match"] == rhs["r_match"]) & (lhs["l_partition"] == rhs["r_partition"]) & in_window
    )
    pairs = lhs.join(rhs, condition, _SPARK_HOW[spec.how])
    return pairs.select(
        *joined(
            sf.coalesce("l_key", "r_key"),
            sf.greatest(sf.unix_millis("l_time"), sf.unix_millis("r_time")),
            sf.coalesce("l_partition", "r_partition"),
            _source_after_join("l", spec.left.name),
            _source_after_join("r", spec.right.name),
            sf.col("l_value"),
            sf.col("r_value"),
            sf.lit(None).cast("array<bigint>"),
        )
    )
