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

A join reading another streaming join's results (a chain in one query) cannot watermark them
again: Spark allows one watermark on each path from a source ("Redefining watermark is
disallowed" past a stateful operator). So each result carries its left record's watermarked
event time (`EVENT_TIME`, the anchor), and its own timestamp, the larger of its two records',
lies within a known span after it (`result_span`). The reading join's time range is then the
window widened by the spans, on the anchors, which Spark uses to evict state and to close
non-matches, and the exact window on the timestamps is one more condition of the join.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.joins.columns import joined
from streamjoin.spark.records import source_id

__all__ = ("EVENT_TIME", "result_span", "stream_join_records")

EVENT_TIME = "event_time"
"""The watermarked event time of a streaming join's left record, carried with its results for
a join that reads them (a result of an outer join without a left record has none)."""


def result_span(spec: JoinSpec, left_span: int) -> int:
    """How far after its EVENT_TIME a result of `spec` may be timestamped, when its left records'
    own timestamps are up to `left_span` after theirs: a match is at most the window's `after`
    later than its left record; a non-match is at its left record's time."""
    assert spec.window is not None, f"join {spec.name!r} has no window"
    return left_span + max(spec.window.after_ms, 0)


_SPARK_HOW = {"inner": "inner", "left": "left_outer", "outer": "full_outer"}


def _side(frame: DataFrame, prefix: str, watermark_ms: int) -> DataFrame:
    """The columns of one side that the join needs. A stream keeps them in Spark's join state,
    every row until its window closes, so it carries them lean: the event time only as the
    watermarked timestamp (`_time`), and the offset instead of the provenance string (made
    after the join, `_source_after_join`). Another join's results keep their anchor as `_time`
    (watermarked upstream) and their own timestamp as `_ms`."""
    # Spark's streaming join finds null keys equal (its state is a hash table on the key), so
    # a null key is matched as a key of its own that nothing on the other side has.
    alone = sf.concat(sf.lit(f"\x00{prefix}:").cast("binary"), source_id(frame).cast("binary"))
    columns = [
        sf.col("key").alias(f"{prefix}_key"),
        sf.coalesce(sf.col("key"), alone).alias(f"{prefix}_match"),
        sf.col("value").alias(f"{prefix}_value"),
        sf.col("partition").alias(f"{prefix}_partition"),
        sf.col("offset").alias(f"{prefix}_offset"),
    ]
    rows = frame.where(sf.col("value").isNotNull())
    if EVENT_TIME in frame.columns:
        times = [
            sf.col(EVENT_TIME).alias(f"{prefix}_time"),
            sf.col("timestamp").alias(f"{prefix}_ms"),
        ]
        return rows.select(*columns, *times)
    return rows.select(
        *columns, sf.timestamp_millis("timestamp").alias(f"{prefix}_time")
    ).withWatermark(f"{prefix}_time", f"{watermark_ms} milliseconds")


def _millis(side: DataFrame, prefix: str) -> Column:
    """A side's record timestamps (ms): its own for another join's results, else its event time."""
    if f"{prefix}_ms" in side.columns:
        return side[f"{prefix}_ms"]
    return sf.unix_millis(side[f"{prefix}_time"])


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


def stream_join_records(
    spec: JoinSpec, left: DataFrame, right: DataFrame, spans: tuple[int, int] = (0, 0)
) -> DataFrame:
    """JOINED_COLUMNS and EVENT_TIME of `spec` over the streams of its two topics (RECORD_SCHEMA;
    another streaming join's results with EVENT_TIME, their timestamps up to `spans` after it),
    as Spark's stream-stream join (no place in the processing order: `pos` null)."""
    window = spec.window
    assert window is not None, f"join {spec.name!r} has no window"
    grace = window.grace_ms
    lhs = _side(left, "l", window.after_ms + grace)
    rhs = _side(right, "r", window.before_ms + grace)
    left_span, right_span = spans
    in_window = (rhs["r_time"] >= lhs["l_time"] - _interval(window.before_ms + right_span)) & (
        rhs["r_time"] <= lhs["l_time"] + _interval(window.after_ms + left_span)
    )
    if left_span or right_span:  # the anchors' range holds the window; the timestamps decide
        l_ms, r_ms = _millis(lhs, "l"), _millis(rhs, "r")
        in_window &= (r_ms >= l_ms - window.before_ms) & (r_ms <= l_ms + window.after_ms)
    condition = (
        (lhs["l_match"] == rhs["r_match"]) & (lhs["l_partition"] == rhs["r_partition"]) & in_window
    )
    pairs = lhs.join(rhs, condition, _SPARK_HOW[spec.how])
    l_ms, r_ms = _millis(pairs, "l"), _millis(pairs, "r")
    return pairs.select(
        *joined(
            sf.coalesce("l_key", "r_key"),
            sf.greatest(l_ms, r_ms),
            sf.coalesce("l_partition", "r_partition"),
            _source_after_join("l", spec.left.name),
            _source_after_join("r", spec.right.name),
            sf.col("l_value"),
            sf.col("r_value"),
            sf.lit(None).cast("array<bigint>"),
        ),
        sf.col("l_time").alias(EVENT_TIME),
    )
