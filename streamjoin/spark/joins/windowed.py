"""The windowed stream-stream join over history, as the worker runs it (runtime/joins/windowed.py)
in the processing order of `order.py`.

Each side's store keeps a record while its timestamp is above that side's stream time (the
largest timestamp of a usable record of the side the task has processed) minus the window's
retention (before + after + grace). So a left record l and a right record r with the same key,
in the same task, r.ts in [l.ts - before, l.ts + after], join exactly when the one processed
first is still kept when the other is processed:

    l first: l.ts > S_left(at r) - retention      r first: r.ts > S_right(at l) - retention

S_side(at x) being that side's stream time once x is processed (a running maximum in the
order). A late record is not dropped: it joins what the other store still keeps. A left (outer:
either side) record that joins nothing is emitted with None: at once when its own store did not
keep it, else when its side's stream time reaches its timestamp + retention (the first record of
its side that gets it there), or after the last record when none does. A record without a key
joins nothing; a side that emits non-matches emits it at once.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.joins.columns import joined, source_of
from streamjoin.spark.order import END, POSITION, after

__all__ = ("windowed_join",)

_SPARK_HOW = {"inner": "inner", "left": "left_outer", "outer": "full_outer"}
_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", POSITION)
_STREAM_TIME = ("s_left", "s_right")


def _stream_times(left: DataFrame, right: DataFrame) -> DataFrame:
    """Both sides' records with `side` (0 left, 1 right) and each side's stream time once the
    record is processed."""
    both = (
        left.select(*_COLUMNS, sf.lit(0).alias("side"))
        .unionByName(right.select(*_COLUMNS, sf.lit(1).alias("side")))
        .where(sf.col("value").isNotNull())
    )
    so_far = (
        Window.partitionBy("partition")
        .orderBy(POSITION)
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    usable = sf.col("key").isNotNull()
    for side, name in enumerate(_STREAM_TIME):
        both = both.withColumn(
            name,
            sf.max(sf.when(usable & (sf.col("side") == side), sf.col("timestamp"))).over(so_far),
        )
    return both


def _prefixed(frame: DataFrame, side: int, prefix: str) -> DataFrame:
    return frame.where(sf.col("side") == side).select(
        *(sf.col(c).alias(f"{prefix}{c}") for c in (*_COLUMNS, *_STREAM_TIME))
    )


def _closing(
    unmatched: DataFrame, marked: DataFrame, prefix: str, side: int, retention: int
) -> DataFrame:
    """`unmatched` (one side's non-matches) with `close_pos`: the `pos` of the first record of
    that side whose stream time reaches the non-match's timestamp + retention (null when none
    does). Stream time only grows along the order, so that record is the first, by stream time,
    of those that reach it."""
    own = _STREAM_TIME[side]
    queries = unmatched.select(
        sf.col(f"{prefix}{POSITION}").alias("q_pos"),
        sf.col(f"{prefix}partition").alias("partition"),
        (sf.col(f"{prefix}timestamp") + retention).alias("at"),
        sf.lit(0).alias("kind"),
        sf.lit(None).cast("array<bigint>").alias("c_pos"),
    )
    candidates = marked.where((sf.col("side") == side) & sf.col("key").isNotNull()).select(
        sf.lit(None).cast("array<bigint>").alias("q_pos"),
        "partition",
        sf.col(own).alias("at"),
        sf.lit(1).alias("kind"),
        sf.col(POSITION).alias("c_pos"),
    )
    onwards = (
        Window.partitionBy("partition")
        .orderBy("at", "kind", "c_pos")
        .rowsBetween(Window.currentRow, Window.unboundedFollowing)
    )
    closes = (
        queries.unionByName(candidates)
        .withColumn("close_pos", sf.first("c_pos", ignorenulls=True).over(onwards))
        .where(sf.col("kind") == 0)
        .select("q_pos", "close_pos")
    )
    return unmatched.join(closes, unmatched[f"{prefix}{POSITION}"] == closes["q_pos"], "left")


def _non_match_pos(prefix: str, side: int, retention: int) -> Column:
    """Where a non-match of `side` is emitted: at once (no key, or its store did not keep it),
    when its side's stream time passes its window, or after everything."""
    pos, ts = sf.col(f"{prefix}{POSITION}"), sf.col(f"{prefix}timestamp")
    at_once = sf.col(f"{prefix}key").isNull() | (
        ts <= sf.col(f"{prefix}{_STREAM_TIME[side]}") - retention
    )
    place = sf.array(sf.lit(1).cast("long"), ts, sf.lit(side).cast("long"))
    return (
        sf.when(at_once, after(pos, 1, ts, side))
        .when(sf.col("close_pos").isNotNull(), sf.concat("close_pos", place, pos))
        .otherwise(sf.concat(sf.array(sf.lit(END)), place, pos))
    )


def windowed_join(spec: JoinSpec, left: DataFrame, right: DataFrame) -> DataFrame:
    """JOINED_COLUMNS of `spec` over its two inputs' records (RECORD_SCHEMA and `pos`, after
    their steps)."""
    window = spec.window
    assert window is not None, f"join {spec.name!r} has no window"
    retention = window.retention_ms
    marked = _stream_times(left, right)
    lhs, rhs = _prefixed(marked, 0, "l_"), _prefixed(marked, 1, "r_")
    l_ts, r_ts = sf.col("l_timestamp"), sf.col("r_timestamp")
    l_pos, r_pos = sf.col(f"l_{POSITION}"), sf.col(f"r_{POSITION}")
    in_window = (r_ts >= l_ts - window.before_ms) & (r_ts <= l_ts + window.after_ms)
    kept = ((l_pos < r_pos) & (l_ts > sf.col("r_s_left") - retention)) | (
        (r_pos < l_pos) & (r_ts > sf.col("l_s_right") - retention)
    )
    condition = (
        (sf.col("l_key") == sf.col("r_key"))
        & (sf.col("l_partition") == sf.col("r_partition"))
        & in_window
        & kept
    )
    pairs = lhs.join(rhs, condition, _SPARK_HOW[spec.how])
    first = sf.least(l_pos, r_pos)
    partner_ts = sf.when(l_pos < r_pos, l_ts).otherwise(r_ts)
    place = sf.array(sf.lit(0).cast("long"), partner_ts)
    matched = pairs.where(l_pos.isNotNull() & r_pos.isNotNull()).withColumn(
        "out_pos", sf.concat(sf.greatest(l_pos, r_pos), place, first)
    )
    parts = [matched]
    emitting = [(0, "l_", r_pos)] if spec.how != "inner" else []
    if spec.how == "outer":
        emitting.append((1, "r_", l_pos))
    for side, prefix, other in emitting:
        unmatched = pairs.where(other.isNull())
        closed = _closing(unmatched, marked, prefix, side, retention)
        parts.append(
            closed.withColumn("out_pos", _non_match_pos(prefix, side, retention)).drop(
                "q_pos", "close_pos"
            )
        )
    results = parts[0]
    for part in parts[1:]:
        results = results.unionByName(part)
    return results.select(
        *joined(
            sf.coalesce("l_key", "r_key"),
            sf.greatest(l_ts, r_ts),
            sf.coalesce("l_partition", "r_partition"),
            source_of("l_"),
            source_of("r_"),
            sf.col("l_value"),
            sf.col("r_value"),
            sf.col("out_pos"),
        )
    )
