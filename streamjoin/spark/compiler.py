"""A windowed stream-stream JoinSpec as a Spark DataFrame join, with the streaming runtime's rule
(streamjoin/runtime/joins/windowed.py) as its predicate:

    same key, same partition (a streaming task joins partition p of both topics),
    right.ts in [left.ts - before, left.ts + after] (inclusive), output ts = the larger one.

Null keys never match (left and outer joins emit them as non-matches); null values are skipped,
as the streaming join skips them. The result is the *final* answer, as if grace were infinite,
unless `drop_late` removes the records the streaming job would have dropped as late (see
`stream_time.py`).

Over streaming inputs (`streaming=True`) it is Spark's stream-stream join: each input gets an
event-time column with a watermark as far behind as its records may still find partners (the
window's reach on the other side, plus grace), and the window becomes a time-range condition
on those columns, so Spark drops records behind the watermark, emits a left/outer non-match once
the watermark has passed its window, and evicts state as the workers' windows close.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.spark.records import source_id
from streamjoin.spark.stream_time import with_lateness

__all__ = ("JOINED_COLUMNS", "join_records")

_SPARK_HOW = {"inner": "inner", "left": "left_outer", "outer": "full_outer"}

JOINED_COLUMNS = (
    "key",
    "timestamp",
    "task_partition",
    "left_source",
    "right_source",
    "left_value",
    "right_value",
)
"""One join result before the joiner: its key, timestamp, the streaming task (partition) that
would produce it, and both sides' provenance ("topic:partition:offset") and value bytes (null
for the side a non-match lacks)."""


def _side(frame: DataFrame, prefix: str, watermark_ms: int | None) -> DataFrame:
    """The columns of one side that the join needs. A stream keeps them in Spark's join state,
    every row until its window closes, so it carries them lean: the event time only as the
    watermarked timestamp (`_time`, no `_ts`), and the offset instead of the provenance
    string (made after the join, `_source_after_join`)."""
    # Spark's streaming join finds null keys equal (its state is a hash table on the key), so
    # a null key is matched as a key of its own that nothing on the other side has.
    alone = sf.concat(sf.lit(f"\x00{prefix}:").cast("binary"), source_id(frame).cast("binary"))
    common = (
        sf.col("key").alias(f"{prefix}_key"),
        sf.coalesce(sf.col("key"), alone).alias(f"{prefix}_match"),
        sf.col("value").alias(f"{prefix}_value"),
        sf.col("partition").alias(f"{prefix}_partition"),
    )
    usable = frame.where(sf.col("value").isNotNull())
    if watermark_ms is None:
        return usable.select(
            *common,
            sf.col("timestamp").alias(f"{prefix}_ts"),
            source_id(frame).alias(f"{prefix}_source"),
        )
    return usable.select(
        *common,
        sf.col("offset").alias(f"{prefix}_offset"),
        sf.timestamp_millis("timestamp").alias(f"{prefix}_time"),
    ).withWatermark(f"{prefix}_time", f"{watermark_ms} milliseconds")


def _source_after_join(prefix: str, topic: str) -> Column:
    """`source_id` of a streamed side's record from its partition and offset (its topic is the
    one the side reads); null for the side a non-match lacks."""
    offset = sf.col(f"{prefix}_offset")
    return sf.when(
        offset.isNotNull(),
        sf.concat_ws(":", sf.lit(topic), sf.col(f"{prefix}_partition").cast("string"), offset),
    )


def _interval(ms: int) -> Column:
    return sf.expr(f"INTERVAL {ms} MILLISECONDS")


def join_records(
    spec: JoinSpec,
    left: DataFrame,
    right: DataFrame,
    *,
    drop_late: bool = False,
    streaming: bool = False,
) -> DataFrame:
    """JOINED_COLUMNS rows of `spec` over the records (RECORD_SCHEMA) of its two topics, as a
    batch join, or over streaming inputs as Spark's stream-stream join."""
    window = spec.window
    if spec.is_stream_table or window is None:
        raise ConfigurationError(
            f"join {spec.name!r} is a stream-table join; the Spark engine runs windowed "
            "stream-stream joins only (run stream-table joins with `streamjoin worker`)"
        )
    if drop_late:
        left, right = with_lateness(spec, left, right)
        left, right = left.where(~sf.col("late")), right.where(~sf.col("late"))
    grace = window.grace_ms
    lhs = _side(left, "l", window.after_ms + grace if streaming else None)
    rhs = _side(right, "r", window.before_ms + grace if streaming else None)
    if streaming:
        in_window = (rhs["r_time"] >= lhs["l_time"] - _interval(window.before_ms)) & (
            rhs["r_time"] <= lhs["l_time"] + _interval(window.after_ms)
        )
        timestamp = sf.greatest(sf.unix_millis("l_time"), sf.unix_millis("r_time"))
        sources = (
            _source_after_join("l", spec.left.name),
            _source_after_join("r", spec.right.name),
        )
    else:
        in_window = (rhs["r_ts"] >= lhs["l_ts"] - sf.lit(window.before_ms)) & (
            rhs["r_ts"] <= lhs["l_ts"] + sf.lit(window.after_ms)
        )
        timestamp = sf.greatest("l_ts", "r_ts")
        sources = (sf.col("l_source"), sf.col("r_source"))
    condition = (
        (lhs["l_match"] == rhs["r_match"]) & (lhs["l_partition"] == rhs["r_partition"]) & in_window
    )
    joined = lhs.join(rhs, condition, _SPARK_HOW[spec.how])
    return joined.select(
        sf.coalesce("l_key", "r_key").alias("key"),
        timestamp.alias("timestamp"),
        sf.coalesce("l_partition", "r_partition").alias("task_partition"),
        sources[0].alias("left_source"),
        sources[1].alias("right_source"),
        sf.col("l_value").alias("left_value"),
        sf.col("r_value").alias("right_value"),
    )
