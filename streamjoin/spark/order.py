"""The order in which Spark assumes the workers process an app's records, where the result
depends on it.

A worker's task takes, of its inputs' buffered records, the one with the lowest timestamp (left
before right on ties: runtime/tasks/ordering.py), each input in offset order. When every input
is available that merge is the order of the key

    (head, rank, partition, offset)

where `head` is the largest timestamp of the record's topic partition up to and including the
record (a record older than one before it is taken right after that one), and `rank` the
topic's place in the app (`source_ranks`: in the order the joins name their sources, left
before right). Spark assumes one such order for all source topics together, every record taken
when all inputs are caught up, and everything a record causes downstream (its re-keyed copy, a
join result, a result of a join reading that result) processed at once, before the next source
record: the order in which `streamjoin.testing.TestDriver` processes records piped to it in
this order. That is the worker's order when its inputs are in the topics before it reads them
(a backfill's case, or workers keeping up with producers that write in time order); a worker
that reads one input far ahead of another processes in another order, and only then can the
results that depend on the order differ (stream-stream pairs one of whose records is late,
stream-table lookups of a key updated at about the same time, foreign-key results).

Each record carries its place as `pos`, an array of longs compared lexicographically: a source
record's is [head, rank, partition, offset]; a record caused by processing another gets that
record's `pos` followed by its own place among what that step emits, so it sorts right after
its cause and before the next source record. `END` starts the place of what is only emitted
after the last record (a left join's non-match whose window never closed).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec

__all__ = ("END", "POSITION", "after", "source_ranks", "with_positions")

POSITION = "pos"
END = (1 << 63) - 1


def source_ranks(app: App) -> dict[str, int]:
    """Each source topic of the app (read from outside, not written by it) -> its rank: the
    order in which the joins, as declared, reach it (left input before right, through key_bys
    and the joins whose output they read)."""
    written = {spec.into.name: spec for spec in app.joins}
    rekeyed = {r.topic.name: r for r in app.repartitions}
    ranks: dict[str, int] = {}

    def visit(topic: str) -> None:
        if topic in rekeyed:
            visit(rekeyed[topic].source.name)
        elif topic in written:
            for upstream in _inputs(written[topic]):
                visit(upstream)
        elif topic not in ranks:
            ranks[topic] = len(ranks)

    for spec in app.joins:
        if spec.foreign_key is None or spec.foreign_key.side == "left":
            for topic in _inputs(spec):
                visit(topic)
    return ranks


def _inputs(spec: JoinSpec) -> tuple[str, ...]:
    """The topics a join reads from outside its own internal topics (a foreign-key join reads
    its two tables; a global-table join its stream and its table)."""
    fk = spec.foreign_key
    if fk is not None:
        return (fk.left_table.name, fk.right_table.name)
    return (spec.left.name, spec.right.name)


def with_positions(frame: DataFrame, rank: int) -> DataFrame:
    """A source topic's records (RECORD_SCHEMA) with their `pos`. Heads are running maxima
    from the first record read: read partitions from their start for the exact order."""
    so_far = (
        Window.partitionBy("partition")
        .orderBy("offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    head = sf.max("timestamp").over(so_far)
    return frame.withColumn(
        POSITION,
        sf.array(head, sf.lit(rank).cast("long"), sf.col("partition").cast("long"), "offset"),
    )


def after(cause: Column, *place: Column | int) -> Column:
    """The `pos` of something emitted while `cause` was processed, at `place` among what that
    step emits."""
    parts = [p if isinstance(p, Column) else sf.lit(p) for p in place]
    return sf.concat(cause, sf.array(*(p.cast("long") for p in parts)))
