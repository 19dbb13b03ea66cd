"""A join as a Spark Structured Streaming query: its source topics read as streams, through
key_by as a shuffle and through the joins before it in the same query (graph.py), the join and
joiner as Spark's stream-stream join (compiler.py), and the results written as Parquet with the
layout of `backfill` (exactly once: Spark's file sink commits through the checkpoint) or
produced to the join's output topic with the workers' headers (at least once).

Windowed stream-stream joins, and stream-table and global-table joins with plain tables
(stream_static.py), along the whole chain: the others are refused in one line with the reason
(`streamable`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.spark.backfill import ensure_output_topic
from streamjoin.spark.graph import AppJob, upstream_joins
from streamjoin.spark.inputs import Sources
from streamjoin.spark.kafka.io import read_stream, write_topic
from streamjoin.spark.kafka.offsets import run_sync
from streamjoin.spark.pipeline import JoinOptions, output_records
from streamjoin.spark.stream_static import TableSnapshot

__all__ = ("StreamSource", "StreamTarget", "Trigger", "start_stream", "streamable")


@dataclass(frozen=True, slots=True)
class StreamSource:
    """Where the inputs come from: Kafka at `bootstrap`, through Spark's own connector
    (`official`) or streamjoin's Python source."""

    bootstrap: KafkaTarget
    official: bool
    max_records_per_batch: int | None = None

    def __post_init__(self) -> None:
        if self.max_records_per_batch is not None and self.max_records_per_batch < 1:
            raise ConfigurationError(
                f"--max-records-per-batch {self.max_records_per_batch}: give a positive number"
            )


@dataclass(frozen=True, slots=True)
class StreamTarget:
    """The checkpoint, and Parquet at `output` or else the join's output topic."""

    checkpoint: str
    output: str | None = None


@dataclass(frozen=True, slots=True)
class Trigger:
    """AvailableNow (what is in the topics now, then stop), a fixed interval ("10 seconds"),
    or the next micro-batch as soon as the last one ends."""

    available_now: bool = False
    interval: str | None = None

    def __post_init__(self) -> None:
        if self.available_now and self.interval is not None:
            raise ConfigurationError("give --available-now or --trigger-interval, not both")

    def apply(self, writer: DataStreamWriter) -> DataStreamWriter:
        if self.available_now:
            return writer.trigger(availableNow=True)
        if self.interval is not None:
            return writer.trigger(processingTime=self.interval)
        return writer


_NOT_AS_STREAM = {
    "table": (
        "a table join's output is the update stream of a table (a result replaced or deleted as "
        "either side changes), and Spark's streaming joins match rows by time and never take "
        "one back"
    ),
    "stream-table": (
        "each record must meet the versioned table's value valid at its time; Spark joins a "
        "stream with a table either as a snapshot read once (latest values only) or as another "
        "stream matched by time, neither of which is that"
    ),
}


def _static_table(spec: JoinSpec) -> bool:
    """A stream-table join (plain table) or a global-table join: a stream-static join in a
    query, exact or stopped (stream_static.py)."""
    return (spec.is_global or spec.is_stream_table) and not spec.has_versioned_table


def streamable(app: App, spec: JoinSpec) -> JoinSpec:
    """`spec`, if Spark can run it as a stream (it and every join it reads are windowed
    stream-stream joins, or stream-table and global-table joins with plain tables); else a
    one-line reason naming what to run instead."""
    for join in upstream_joins(app, spec):
        if join.window is not None or _static_table(join):
            continue
        kind = "table" if join.emits_table else "stream-table"
        via = "" if join is spec else f" (join {spec.name!r} reads its output)"
        raise ConfigurationError(
            f"join {join.name!r}{via} is a {join.kind}, which Spark cannot run as a stream: "
            f"{_NOT_AS_STREAM[kind]}; run it with `streamjoin worker`, or over history with "
            "`streamjoin backfill`"
        )
    _one_watermark(app, spec)
    return spec


def _writer(app: App, topic: str) -> JoinSpec | None:
    """The join whose output `topic` is, through key_bys; none for a topic from outside."""
    written = {s.into.name: s for s in app.joins}
    rekeyed = {r.topic.name: r for r in app.repartitions}
    while topic in rekeyed:
        topic = rekeyed[topic].source.name
    return written.get(topic)


def _one_watermark(app: App, spec: JoinSpec) -> None:
    """Refuse a windowed join reading results that carry no event time it can use: Spark allows
    one watermark on each path from a source, so a windowed join reading another join's results
    times them by the event time those carry (compiler.py's EVENT_TIME), which an outer join's
    right-only non-matches and a table lookup's results lack."""
    for join in upstream_joins(app, spec):
        if join.window is None:
            continue
        for topic in (join.left.name, join.right.name):
            upstream = _writer(app, topic)
            if upstream is None:
                continue
            what = upstream.kind
            if upstream.window is not None and upstream.how == "outer":
                what = f"outer {what}"
                why = "its right records without a match carry no left record's event time"
            elif upstream.window is None and any(
                j.window is not None for j in upstream_joins(app, upstream)
            ):
                why = "a table lookup's results do not carry the windowed join's event time"
            else:
                continue
            raise ConfigurationError(
                f"join {join.name!r} reads the output of {what} {upstream.name!r}, "
                "which Spark cannot time in one stream: it allows one watermark on each path "
                f"from a source and {why}; run it with `streamjoin worker`, or over history "
                "with `streamjoin backfill`"
            )


_LATE_BY_THIS_WATERMARK = {"spark.sql.streaming.statefulOperator.allowMultiple": "false"}
"""With one stateful operator (the join): Spark drops the rows behind the micro-batch's own
watermark and counts them (`numRowsDroppedByWatermark`). Spark's default (several allowed)
counts only the rows behind the previous micro-batch's watermark; the others it leaves out of the
join's state without a count, yet lets them match what the state still holds."""

_NO_CLOSING_BATCH = {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}
"""For an inner join under AvailableNow: the micro-batch without data that Spark runs last, to
apply the advanced watermark, emits nothing for an inner join (only non-matches wait for the
watermark) and only evicts state, which the next run's first micro-batch evicts anyway; it
scans the whole state (a fifth of a backlog's time, bench/spark_stream.py)."""


def _settings(app: App, spec: JoinSpec, trigger: Trigger) -> dict[str, str]:
    """The session settings the query of `spec` starts with (a chain of joins is several
    stateful operators: Spark's default for them)."""
    if len(upstream_joins(app, spec)) > 1:
        return {}
    if trigger.available_now and spec.how == "inner":
        return {**_LATE_BY_THIS_WATERMARK, **_NO_CLOSING_BATCH}
    return dict(_LATE_BY_THIS_WATERMARK)


@contextmanager
def _starting_with(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` in effect while a query starts (it keeps the settings it started with)."""
    before: dict[str, str | None] = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, earlier in before.items():
            if earlier is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, earlier)


def _records(
    spark: SparkSession, app: App, spec: JoinSpec, source: StreamSource, skip_failures: bool
) -> tuple[DataFrame, int, TableSnapshot]:
    """The query's output records, the partition count of its output topic, and the snapshot
    of the tables it joins (none: no ranges)."""
    options = JoinOptions(
        skip_failures=skip_failures,
        streaming=True,
        max_record_bytes=app.settings.max_record_bytes,
    )

    def stream(topic: str) -> DataFrame:
        return read_stream(
            spark,
            source.bootstrap,
            topic,
            official=source.official,
            max_records_per_batch=source.max_records_per_batch,
        )

    job = AppJob(spark, app, Sources(source.bootstrap), options=options, streams=stream)
    records = output_records(job.results(spec))
    snapshot = TableSnapshot(source.bootstrap, tuple(job.kafka_ranges))
    return records, job.partitions(spec.into.name), snapshot


def start_stream(  # noqa: PLR0917 - the query's join, source, target and trigger
    spark: SparkSession,
    app: App,
    spec: JoinSpec,
    source: StreamSource,
    target: StreamTarget,
    trigger: Trigger,
    *,
    skip_failures: bool = True,
) -> StreamingQuery:
    """Start the query of `spec`; it continues from `target.checkpoint` when that exists."""
    streamable(app, spec)
    records, partitions, snapshot = _records(spark, app, spec, source, skip_failures)
    writer = records.writeStream.queryName(f"streamjoin_{spec.name}").option(
        "checkpointLocation", target.checkpoint
    )
    writer = trigger.apply(writer.outputMode("append"))
    output = target.output
    if output is not None and not snapshot.ranges:
        writer = writer.format("parquet").option("path", output)
    elif output is not None:

        def write(batch: DataFrame, batch_id: int) -> None:
            snapshot.check()
            # A micro-batch redone after a failure replaces its own directory: once each.
            batch.write.mode("overwrite").parquet(f"{output.rstrip('/')}/batch={batch_id}")

        writer = writer.foreachBatch(write)
    else:
        bootstrap, topic = source.bootstrap, spec.into.name
        run_sync(lambda: ensure_output_topic(bootstrap, topic, lambda: partitions))

        def produce(batch: DataFrame, _batch_id: int) -> None:
            snapshot.check()
            write_topic(batch, bootstrap, topic)

        writer = writer.foreachBatch(produce)
    with _starting_with(spark, _settings(app, spec, trigger)):
        return writer.start()
