"""An app's joins as one Spark job: every topic a join reads built from the app's source topics,
as the workers' topology builds it, in the processing order of `order.py`.

- A source topic (read from outside the app) comes from Kafka or its archive, with `pos`.
- A repartition topic is its key_by run on its source's records (`rekey.py`): a shuffle by the
  new key instead of a read of the topic.
- A join's output topic that another join reads is that join's results, computed in the same
  job, each in the partition the workers' producer gives it; in a streaming query with the
  event time a join reading them needs (compiler.py's EVENT_TIME and its span).

So a chained join and the joins before it run together, and nothing reads an internal topic.
Stream topics are read with a margin before `--from` and after `--to` (the windows' reach and
retention along the chain); tables and global tables whole, since a result in range may depend
on any earlier update.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec, Repartition
from streamjoin.dsl.topics import Table
from streamjoin.dsl.topology import compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.watermarks import topic_partitions
from streamjoin.spark.archive import read_archive
from streamjoin.spark.compiler import EVENT_TIME, result_span
from streamjoin.spark.inputs import Sources, TimeRange, read_topics
from streamjoin.spark.kafka.offsets import OffsetRange, run_sync
from streamjoin.spark.order import POSITION, source_ranks, with_positions
from streamjoin.spark.pipeline import JoinOptions, join_results, output_records
from streamjoin.spark.rekey import keyed_partitions, rekey

__all__ = ("UNION_BY_PARTITIONS_OFF", "AppJob", "source_topics", "upstream_joins")

UNION_BY_PARTITIONS_OFF = ("spark.sql.unionOutputPartitioning", "false")
"""The joins take the union of their inputs and run windows over it by task partition. With
this setting on (Spark's default), a union of inputs each already hash-partitioned by partition
claims that partitioning, but adaptive execution coalesces its inputs' shuffles each its own
way, so one task partition's records end up in two tasks and a window computes two running
maxima: wrong stream times, lost pairs (seen on PySpark 4.3 with the scenarios of
tests/spark/test_spark_equals_driver.py). Off, the union is shuffled once more before the
window."""


def upstream_joins(app: App, spec: JoinSpec) -> list[JoinSpec]:
    """The joins whose results `spec` reads (through key_bys too), transitively, and `spec`."""
    written = {s.into.name: s for s in app.joins}
    rekeyed = {r.topic.name: r for r in app.repartitions}
    found: dict[str, JoinSpec] = {}

    def visit(join: JoinSpec) -> None:
        if join.name in found:
            return
        found[join.name] = join
        for name in _reads(join):
            topic = name
            while topic in rekeyed:
                topic = rekeyed[topic].source.name
            if topic in written:
                visit(written[topic])

    visit(spec)
    return list(found.values())


def source_topics(app: App, specs: list[JoinSpec]) -> list[str]:
    """The topics from outside the app that `specs` read, through key_bys and joins."""
    written = {s.into.name: s for s in app.joins}
    rekeyed = {r.topic.name: r for r in app.repartitions}
    found: dict[str, None] = {}

    def visit(topic: str) -> None:
        if topic in rekeyed:
            visit(rekeyed[topic].source.name)
        elif topic in written:
            for upstream in _reads(written[topic]):
                visit(upstream)
        else:
            found[topic] = None

    for spec in specs:
        for topic in _reads(spec):
            visit(topic)
    return list(found)


def _reads(spec: JoinSpec) -> tuple[str, ...]:
    fk = spec.foreign_key
    if fk is not None:
        return (fk.left_table.name, fk.right_table.name)
    return (spec.left.name, spec.right.name)


@dataclass
class AppJob:
    """The app's topics and joins as DataFrames, each built once, on demand."""

    spark: SparkSession
    app: App
    sources: Sources
    time_range: TimeRange = field(default_factory=TimeRange)
    options: JoinOptions = field(default_factory=JoinOptions)
    streams: Callable[[str], DataFrame] | None = None
    """Reads a source topic as a stream (RECORD_SCHEMA) for a streaming query; else the source
    topics are read as batches, with their `pos`."""
    kafka_ranges: list[OffsetRange] = field(default_factory=list)
    """The offset ranges read from Kafka as batches."""
    _records: dict[str, DataFrame] = field(default_factory=dict)
    _results: dict[str, DataFrame] = field(default_factory=dict)
    _partitions: dict[str, int] = field(default_factory=dict)
    _spans: dict[str, int] = field(default_factory=dict)
    """Streams of joins' results: how far after their EVENT_TIME their timestamps may be."""

    def __post_init__(self) -> None:
        self.spark.conf.set(*UNION_BY_PARTITIONS_OFF)
        self._written = {spec.into.name: spec for spec in self.app.joins}
        self._rekeyed = {r.topic.name: r for r in self.app.repartitions}
        self.ranks: dict[str, int] = source_ranks(self.app)
        self._tables = {
            t.name for s in self.app.joins for t in (s.left, s.right) if isinstance(t, Table)
        }

    def _margin(self, specs: list[JoinSpec]) -> int:
        """How far before and after the range the windowed joins along the chain look."""
        chain = {j.name: j for spec in specs for j in upstream_joins(self.app, spec)}
        return sum(
            max(j.window.before_ms, j.window.after_ms) + j.window.retention_ms
            for j in chain.values()
            if j.window is not None
        )

    def prepare(self, specs: list[JoinSpec]) -> None:
        """Read the source topics `specs` need and learn every partition count."""
        wanted = [t for t in source_topics(self.app, specs) if t not in self._records]
        if not wanted:
            return
        self._partitions.update(self._existing(wanted))
        streams = [t for t in wanted if t not in self._tables]
        tables = [t for t in wanted if t in self._tables]
        if self.streams is not None:
            for topic in streams:
                unordered = sf.lit(None).cast("array<bigint>").alias(POSITION)
                self._records[topic] = self.streams(topic).select("*", unordered)
            self._read(tables, TimeRange())  # a snapshot (stream_static.py)
        else:
            self._read(streams, self.time_range.widened(self._margin(specs)))
            self._read(tables, TimeRange())
        topology = compile_topology(self.app, self._partitions, require_sources=False)
        for topic, count in topology.partitions.items():
            if count is not None:
                self._partitions.setdefault(topic, count)

    def _read(self, topics: list[str], time_range: TimeRange) -> None:
        """Read `topics` as batches, with their `pos`."""
        if topics:
            inputs = read_topics(self.spark, self.sources, topics, time_range)
            self.kafka_ranges += inputs.kafka_ranges
            for topic, frame in inputs.frames.items():
                self._records[topic] = with_positions(frame, self.ranks[topic])

    def _existing(self, topics: list[str]) -> dict[str, int]:
        """Partition counts of source topics: the broker's; for an archive, the count the
        app declares, else as many as it holds."""
        counts: dict[str, int] = {}
        from_kafka = [t for t in topics if t not in self.sources.archives]
        if from_kafka and self.sources.bootstrap:
            bootstrap = self.sources.bootstrap
            found = run_sync(lambda: topic_partitions(bootstrap, from_kafka))
            for tp in found:
                counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
        declared = {
            t.name: t.partitions for s in self.app.joins for t in (s.left, s.right) if t.partitions
        }
        for topic, path in self.sources.archives.items():
            if topic in topics and topic in declared:
                counts[topic] = declared[topic]
            elif topic in topics:
                archived = read_archive(self.spark, path, topic)
                top = archived.agg(sf.max("partition")).collect()[0][0]
                counts[topic] = 1 if top is None else int(top) + 1
        return counts

    def partitions(self, topic: str) -> int:
        count = self._partitions.get(topic)
        if count is None:
            raise ConfigurationError(f"the partition count of {topic!r} is not known")
        return count

    def records(self, topic: str) -> DataFrame:
        """RECORD_SCHEMA rows and `pos` of a topic the app's joins read."""
        found = self._records.get(topic)
        if found is not None:
            return found
        if topic in self._rekeyed:
            found = self._rekeyed_records(self._rekeyed[topic])
        elif topic in self._written:
            found = self._output_as_input(self._written[topic])
        else:
            raise ConfigurationError(f"topic {topic!r} was not read (prepare the job first)")
        self._records[topic] = found
        return found

    def _rekeyed_records(self, repartition: Repartition) -> DataFrame:
        source = self.records(repartition.source.name)
        count = self.partitions(repartition.topic.name)
        if repartition.source.name in self._spans:
            self._spans[repartition.topic.name] = self._spans[repartition.source.name]
        return rekey(source, repartition, count, skip_failures=self.options.skip_failures)

    def _output_as_input(self, spec: JoinSpec) -> DataFrame:
        """A join's results as the records of its output topic, for a join that reads it."""
        results = self.results(spec)
        carried = [EVENT_TIME] if EVENT_TIME in results.columns else []
        if carried:
            left_span = self._spans.get(_reads(spec)[0], 0)
            self._spans[spec.into.name] = result_span(spec, left_span)
        records = results.select(
            "key",
            "value",
            sf.lit(spec.into.name).alias("topic"),
            sf.col("task_partition").cast("int").alias("partition"),
            sf.lit(None).cast("long").alias("offset"),
            "timestamp",
            sf.array().cast("array<struct<key:string,value:binary>>").alias("headers"),
            "pos",
            *carried,
        )
        return keyed_partitions(records, self.partitions(spec.into.name))

    def results(self, spec: JoinSpec) -> DataFrame:
        """JOINED_COLUMNS and the joiner's `value` of `spec`, over all it read."""
        found = self._results.get(spec.name)
        if found is None:
            self.prepare([spec])
            reads = _reads(spec)
            left, right = (self.records(topic) for topic in reads)
            spans = (self._spans.get(reads[0], 0), self._spans.get(reads[1], 0))
            found = join_results(spec, left, right, self.options, spans)
            self._results[spec.name] = found
        return found

    def output(self, spec: JoinSpec) -> DataFrame:
        """OUTPUT_SCHEMA records of `spec` with timestamps in the time range. A table join's
        (an update stream, where the last value per key counts) come each key in one Spark
        partition, in the order the workers emit them: so written to a topic or to Parquet."""
        results = self.results(spec).where(self.time_range.contains(sf.col("timestamp")))
        if spec.emits_table:
            results = results.repartition("key").sortWithinPartitions(POSITION)
        return output_records(results)
