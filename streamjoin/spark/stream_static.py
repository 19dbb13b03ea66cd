"""Stream-table and global-table joins in a streaming query, as Spark's stream-static join, where
that gives the workers' result exactly; else the query stops with one line saying why.

The workers join each stream record with the table as of that record (joins/stream_table.py).
A stream-static join reads the table once, when the query starts, and joins every record with
that snapshot: each key's latest update. The two agree exactly when every record comes after
its key's latest update and the table does not change while the query runs. So:

- a record not later than its key's latest update in the snapshot (the workers would join it
  with an earlier version, or with none) fails the query (`_RefuseOlder`);
- each micro-batch first checks that the table topics still end where the snapshot did
  (`TableSnapshot.check`); a query started again reads the table again and goes on from its
  checkpoint.

A plain table is looked up in the stream record's partition, as a worker's task does; a global
table by the key `key=` gives. A versioned table is refused before the query starts (as-of
lookups need its versions: streaming.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.spark.joins.global_table import LOOKUP, lookup_keys
from streamjoin.spark.joins.stream_table import RECORD_COLUMNS, UPDATE_COLUMNS, lookup_results
from streamjoin.spark.kafka.offsets import OffsetRange, plan_ranges
from streamjoin.spark.order import POSITION
from streamjoin.spark.shipping import ship

__all__ = ("TableSnapshot", "stream_static_join")

_UPDATED = "_updated"


@dataclass(frozen=True, slots=True)
class TableSnapshot:
    """The offsets of the table topics a query read when it started."""

    bootstrap: KafkaTarget
    ranges: tuple[OffsetRange, ...]

    def check(self) -> None:
        """Raise when a table topic has records past the snapshot."""
        if not self.ranges:
            return
        topics = sorted({r.topic for r in self.ranges})
        now = {(r.topic, r.partition): r.end for r in plan_ranges(self.bootstrap, topics)}
        for read in self.ranges:
            added = now.get((read.topic, read.partition), read.end) - read.end
            if added > 0:
                raise ConfigurationError(
                    f"table {read.topic!r} changed since the query started ({added} new records "
                    f"in partition {read.partition}): a stream-static join keeps the table as "
                    "read at the start, where the workers join later records with the new "
                    "values; start the query again (it reads the table again and goes on from "
                    "its checkpoint), or run the join with `streamjoin worker`"
                )


class _RefuseOlder:
    """Fails the query on a record not later than its key's latest update in the snapshot."""

    def __init__(self, join: str, table: str) -> None:
        self.join, self.table = join, table

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            updated = batch.column(_UPDATED).to_pylist()
            for ts, at in zip(batch.column("timestamp").to_pylist(), updated, strict=True):
                if at is not None and at >= ts:
                    raise ConfigurationError(
                        f"join {self.join!r}: a record at {ts} is not later than the latest "
                        f"update of its key in table {self.table!r} (at {at}); a stream-static "
                        "join would join it with that update, the workers with the table as "
                        "of the record: run it over history with `streamjoin backfill`"
                    )
            yield batch


def _latest(table: DataFrame, by: list[str]) -> DataFrame:
    """Each key's latest update (a tombstone too) in the snapshot, as `t`, with `by`."""
    newest = Window.partitionBy(*by).orderBy(sf.col(POSITION).desc())
    return (
        table.withColumn("_n", sf.row_number().over(newest))
        .where(sf.col("_n") == 1)
        .select(*by, sf.struct(*UPDATE_COLUMNS).alias("t"))
    )


def stream_static_join(
    spec: JoinSpec, stream: DataFrame, table: DataFrame, *, skip_failures: bool
) -> DataFrame:
    """JOINED_COLUMNS of a plain stream-table or a global-table join over a stream (after its
    steps) and a snapshot of the table topic (RECORD_SCHEMA and `pos`)."""
    stream = stream.where(sf.col("value").isNotNull()).select(*RECORD_COLUMNS)
    table = table.where(sf.col("key").isNotNull())
    if spec.is_global:
        queries = lookup_keys(spec, stream, skip_failures=skip_failures)
        by, table = [LOOKUP], table.withColumnRenamed("key", LOOKUP)
    else:
        queries, by = stream, ["partition", "key"]
    # Read once, at the first micro-batch: Spark would read the snapshot's offsets again and
    # pick each key's latest update again in every micro-batch.
    latest = _latest(table, by).persist()
    found = queries.join(latest, by, "left").withColumn(_UPDATED, sf.col("t.timestamp"))
    check = ship(_RefuseOlder(spec.name, spec.right.name), f"join {spec.name!r}", [])
    checked = found.mapInArrow(check, found.schema).drop(_UPDATED)
    if spec.is_global:
        checked = checked.drop(LOOKUP)
    return lookup_results(spec, checked, sf.col("key"))
