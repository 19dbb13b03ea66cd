"""Stream-table joins over history, as the worker runs them (runtime/joins/table.py,
versioned_table.py) in the processing order of `order.py`: the table is the sequence of its
updates, and each stream record meets the table as the task has it when the record comes.

- A plain table: the key's last update processed before the stream record (a tombstone: none).
- A versioned table (KIP-914, Kafka Streams 4.4's rules): of the key's versions processed before
  the record, the one valid at the record's timestamp (the latest with a timestamp at or before
  it; equal timestamps: the later write). The table's observed time is the largest timestamp of
  its updates so far in the task; an update older than observed time - history is dropped, and a
  stream record older than that is too old: it finds only the key's latest version, and only if
  that was valid at its time.

A match carries the stream record's timestamp; a left join emits a record without a match with
None, an inner join drops it. Stream records without a key find nothing; table updates without
one are skipped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.topics import Table
from streamjoin.spark.joins.columns import joined, source_of
from streamjoin.spark.order import POSITION, after

__all__ = ("latest_before", "stream_table_join")

RECORD_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", POSITION)
_UPDATE = ("value", "topic", "partition", "offset", "timestamp", POSITION)


def latest_before(
    queries: DataFrame, updates: DataFrame, by: tuple[str, ...], found: str = "t"
) -> DataFrame:
    """`queries` (with `pos`) with `found`: the struct (value, topic, partition, offset,
    timestamp, pos) of the last of `updates` before each query among those with the same `by`
    columns, null when none; a tombstone is an update too (its `value` null)."""
    marked = updates.select(
        *by,
        sf.col(POSITION).alias("_at"),
        sf.struct(*_UPDATE).alias("_update"),
    )
    rows = queries.withColumn("_at", sf.col(POSITION)).unionByName(marked, allowMissingColumns=True)
    so_far = (
        Window.partitionBy(*by)
        .orderBy("_at")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        rows.withColumn(found, sf.last("_update", ignorenulls=True).over(so_far))
        .where(sf.col("_update").isNull())
        .select(*queries.columns, found)
    )


def _observed(stream: DataFrame, table: DataFrame, history_ms: int) -> tuple[DataFrame, DataFrame]:
    """(stream rows with `too_old`, the table updates the versioned store kept, prefixed t_).
    The store's observed time before a row is the largest timestamp of the table updates
    before it in its task; an update older than that minus the history is dropped, a lookup
    older than it is too old."""
    both = stream.withColumn("_table", sf.lit(False)).unionByName(
        table.withColumn("_table", sf.lit(True))
    )
    before = (
        Window.partitionBy("partition").orderBy(POSITION).rowsBetween(Window.unboundedPreceding, -1)
    )
    observed = sf.max(sf.when(sf.col("_table"), sf.col("timestamp"))).over(before)
    old = sf.coalesce(sf.col("timestamp") < observed - history_ms, sf.lit(False))
    marked = both.withColumn("_old", old)
    rows = marked.where(~sf.col("_table")).withColumnRenamed("_old", "too_old").drop("_table")
    kept = marked.where(sf.col("_table") & ~sf.col("_old")).select(
        *(sf.col(c).alias(f"t_{c}") for c in RECORD_COLUMNS)
    )
    return rows, kept


def _as_of_versioned(stream: DataFrame, table: DataFrame, history_ms: int) -> DataFrame:
    """Stream rows with `t`: the version each joins (null when none)."""
    rows, kept = _observed(stream, table, history_ms)
    t_ts, t_pos = sf.col("t_timestamp"), sf.col(f"t_{POSITION}")
    candidates = rows.join(
        kept,
        (rows["partition"] == kept["t_partition"])
        & (rows["key"] == kept["t_key"])
        & (t_pos < rows[POSITION])
        & (t_ts <= rows["timestamp"]),
        "left",
    )
    best = Window.partitionBy(POSITION).orderBy(t_ts.desc(), t_pos.desc())
    update = sf.struct(*(sf.col(f"t_{c}").alias(c) for c in _UPDATE))
    valid = (
        candidates.withColumn("_n", sf.row_number().over(best))
        .where(sf.col("_n") == 1)
        .withColumn("t", sf.when(t_pos.isNotNull(), update))
    )
    # A too-old record finds the key's newest version only: nothing if one newer than it exists.
    newest = latest_before(
        rows.select(POSITION, "partition", "key"),
        kept.select(*(sf.col(f"t_{c}").alias(c) for c in RECORD_COLUMNS)),
        ("partition", "key"),
        "newest",
    ).select(sf.col(POSITION).alias("_q"), sf.col("newest.timestamp").alias("_newest"))
    checked = valid.join(newest, valid[POSITION] == newest["_q"], "left")
    hidden = sf.col("too_old") & sf.coalesce(sf.col("_newest") > sf.col("timestamp"), sf.lit(False))
    return checked.withColumn("t", sf.when(~hidden, sf.col("t"))).select(*stream.columns, "t")


def stream_table_join(spec: JoinSpec, stream: DataFrame, table: DataFrame) -> DataFrame:
    """JOINED_COLUMNS of a stream-table join over its stream's records (after its steps) and
    its table's updates (RECORD_SCHEMA and `pos` both)."""
    stream = stream.where(sf.col("value").isNotNull()).select(*RECORD_COLUMNS)
    table = table.where(sf.col("key").isNotNull()).select(*RECORD_COLUMNS)
    right = spec.right
    if isinstance(right, Table) and right.versioned:
        assert right.history_ms is not None
        found = _as_of_versioned(stream, table, right.history_ms)
    else:
        found = latest_before(stream, table, ("partition", "key"))
    return lookup_results(spec, found, sf.col("key"))


def lookup_results(spec: JoinSpec, found: DataFrame, key: Column) -> DataFrame:
    """JOINED_COLUMNS from stream rows with `t`, the table update each found (null, or a
    tombstone: nothing found): a match, or a non-match with None in a left join."""
    match = sf.col("t").isNotNull() & sf.col("t.value").isNotNull()
    if spec.how == "inner":
        found = found.where(match)
    table_source = sf.concat_ws(
        ":", "t.topic", sf.col("t.partition").cast("string"), sf.col("t.offset").cast("string")
    )
    return found.select(
        *joined(
            key,
            sf.col("timestamp"),
            sf.col("partition"),
            source_of(),
            sf.when(match, table_source),
            sf.col("value"),
            sf.when(match, sf.col("t.value")),
            after(sf.col(POSITION), 0),
        )
    )
