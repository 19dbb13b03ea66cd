"""Audit: recompute a join on Spark (every kind, as backfill does) and compare it, record by
record, with what the workers wrote to its output topic.

A record is identified by its key, its timestamp and its provenance headers
(`streamjoin.left`/`.right` = "topic:partition:offset"; for a record of an internal topic, a
repartition topic or another join's output, "topic:partition": Spark cannot know its offset
there), and compared by value (first as bytes, then decoded: the same object may be spelled two
ways). Per identity, every difference gets a class:

- duplicate: a result written more than once (at-least-once replays; harmless),
- not_yet_emitted: an expected result whose cause the workers had not processed yet (a source
  record past the group's committed offset, an internal topic not caught up, or a left join's
  non-match whose window has not closed),
- different: written with the same key, timestamp and sources but another value,
- missing: expected, not written, not explained,
- extra: written, but the recomputation has no such record,
- order_dependent: in a table join's output, an update in between of a key whose last value is
  the recomputation's (audit/tables.py).

Missing, different and extra fail the audit. The recomputation assumes the processing order of
`order.py`: where the workers took records in another order (an input read far behind another),
results that depend on the order can differ, and are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.audit.sources import committed_frame, internal_topics, lagging
from streamjoin.spark.audit.tables import final_values_agree
from streamjoin.spark.audit.values import canonical_values
from streamjoin.spark.graph import AppJob
from streamjoin.spark.inputs import Sources, TimeRange, read_topics
from streamjoin.spark.order import END, POSITION
from streamjoin.spark.pipeline import JoinOptions
from streamjoin.spark.records import header_value

__all__ = ("CLASSES", "FAILING", "AuditReport", "audit")

CLASSES = ("missing", "extra", "different", "duplicate", "not_yet_emitted", "order_dependent")
FAILING = ("missing", "extra", "different")
_ID = ("i_key", "i_ts", "i_left", "i_right")


@dataclass(frozen=True, slots=True)
class AuditReport:
    join: str
    expected: int
    """Results the recomputation gives in the time range."""
    written: int
    """Records the workers wrote in the time range (duplicates included)."""
    matched: int
    """Expected results written with the right key, timestamp, sources and value."""
    counts: dict[str, int]
    examples: dict[str, list[str]] = field(default_factory=dict)
    lagging: dict[str, int] = field(default_factory=dict)
    """Internal topics the workers had not caught up with: topic -> records behind."""

    @property
    def failed(self) -> bool:
        return any(self.counts[name] for name in FAILING)


def _normalized(source: Column, internal: list[str]) -> Column:
    """A provenance header as Spark can know it: without the offset for an internal topic."""
    topic = sf.regexp_extract(source, r"^(.*):(\d+):(\d+)$", 1)
    shorter = sf.regexp_extract(source, r"^(.*:\d+):\d+$", 1)
    if not internal:
        return source
    return sf.when(topic.isin(internal), shorter).otherwise(source)


def _written(output: DataFrame, time_range: TimeRange, internal: list[str]) -> DataFrame:
    headers = sf.col("headers")
    return output.where(time_range.contains(sf.col("timestamp"))).select(
        sf.col("key").alias("i_key"),
        sf.col("timestamp").alias("i_ts"),
        _normalized(header_value(headers, LEFT_SOURCE_HEADER).cast("string"), internal).alias(
            "i_left"
        ),
        _normalized(header_value(headers, RIGHT_SOURCE_HEADER).cast("string"), internal).alias(
            "i_right"
        ),
        "value",
        sf.lit(0).alias("e"),
        sf.lit(1).alias("w"),
        sf.lit(False).alias("unseen"),
    )


def _expected(
    job: AppJob, spec: JoinSpec, time_range: TimeRange, committed: DataFrame, behind: bool
) -> DataFrame:
    """The recomputed results in range, each with `unseen`: its cause not processed yet."""
    results = job.results(spec).where(time_range.contains(sf.col("timestamp")))
    ranks = job.ranks
    topic_of = sf.create_map(*(sf.lit(x) for rank in ranks.items() for x in rank[::-1]))
    pos = sf.col(POSITION)
    caused = results.select(
        "*",
        sf.element_at(topic_of, pos[1].cast("int")).alias("c_topic"),
        pos[2].cast("int").alias("c_partition"),
        pos[3].alias("c_offset"),
    )
    status = caused.join(
        sf.broadcast(committed),
        (caused["c_topic"] == committed["topic"])
        & (caused["c_partition"] == committed["partition"]),
        "left",
    )
    unprocessed = sf.coalesce(sf.col("c_offset") >= sf.col("committed"), sf.lit(False))
    return status.select(
        sf.col("key").alias("i_key"),
        sf.col("timestamp").alias("i_ts"),
        sf.col("left_source").alias("i_left"),
        sf.col("right_source").alias("i_right"),
        "value",
        sf.lit(1).alias("e"),
        sf.lit(0).alias("w"),
        (sf.lit(behind) | (pos[0] == END) | unprocessed).alias("unseen"),
    )


def audit(
    spark: SparkSession,
    app: App,
    spec: JoinSpec,
    group: str,
    sources: Sources,
    *,
    time_range: TimeRange | None = None,
    options: JoinOptions | None = None,
    examples: int = 5,
) -> AuditReport:
    """Compare the output topic of `spec` with its recomputation, for records with timestamps
    in `time_range`. `group` is the workers' consumer group (the app id)."""
    time_range = time_range or TimeRange()
    job = AppJob(spark, app, sources, TimeRange(), options or JoinOptions())
    job.prepare([spec])
    internal = internal_topics(app, spec)
    behind = lagging(sources.bootstrap, group, internal)
    read = [
        (t, p) for t in job.ranks if t not in sources.archives for p in range(job.partitions(t))
    ]
    committed = committed_frame(spark, sources.bootstrap, group, read)
    written = read_topics(spark, sources, [spec.into.name], TimeRange()).frames[spec.into.name]
    rows = _expected(job, spec, time_range, committed, bool(behind)).unionByName(
        _written(written, time_range, internal)
    )
    by_value = rows.groupBy(*_ID, "value").agg(
        sf.sum("e").alias("e"), sf.sum("w").alias("w"), sf.max("unseen").alias("unseen")
    )
    by_value = by_value.select(
        "*",
        sf.least("e", "w").alias("ok"),
        sf.when(sf.col("e") > 0, sf.greatest(sf.col("w") - sf.col("e"), sf.lit(0)))
        .otherwise(0)
        .alias("dup"),
        sf.greatest(sf.col("e") - sf.col("w"), sf.lit(0)).alias("left_e"),
        sf.when(sf.col("e") == 0, sf.col("w")).otherwise(0).alias("left_w"),
    ).cache()
    try:
        totals = by_value.agg(*(sf.sum(c).alias(c) for c in ("e", "w", "ok", "dup"))).collect()[0]
        leftovers = by_value.where((sf.col("left_e") > 0) | (sf.col("left_w") > 0))
        finals = None
        if spec.emits_table:
            finals = final_values_agree(spec, job.results(spec), written, time_range)
        return _settle(spec, leftovers, totals, behind, examples, finals)
    finally:
        by_value.unpersist()


def _settle(  # noqa: PLR0917 - what the first pass left and found
    spec: JoinSpec,
    leftovers: DataFrame,
    totals: object,
    behind: dict[str, int],
    examples: int,
    finals: DataFrame | None,
) -> AuditReport:
    """Match what bytes did not, by decoded value; count and describe the rest per identity."""
    by_canon = (
        canonical_values(spec, leftovers)
        .groupBy(*_ID, "canon")
        .agg(
            sf.sum("left_e").alias("e2"),
            sf.sum("left_w").alias("w2"),
            sf.max("unseen").alias("unseen"),
        )
    )
    rest = by_canon.select(
        *_ID,
        "unseen",
        sf.least("e2", "w2").alias("ok2"),
        sf.greatest(sf.col("e2") - sf.col("w2"), sf.lit(0)).alias("re"),
        sf.greatest(sf.col("w2") - sf.col("e2"), sf.lit(0)).alias("rw"),
        sf.when(sf.col("e2") > sf.col("w2"), sf.col("canon")).alias("e_canon"),
        sf.when(sf.col("w2") > sf.col("e2"), sf.col("canon")).alias("w_canon"),
    )
    per_id = rest.groupBy(*_ID).agg(
        sf.sum("ok2").alias("ok2"),
        sf.sum("re").alias("re"),
        sf.sum("rw").alias("rw"),
        sf.max("unseen").alias("unseen"),
        sf.first("e_canon", ignorenulls=True).alias("e_canon"),
        sf.first("w_canon", ignorenulls=True).alias("w_canon"),
    )
    if finals is not None:
        per_id = per_id.join(finals, "i_key", "left")
    settled = (
        sf.coalesce(sf.col("final_ok"), sf.lit(False)) if finals is not None else sf.lit(False)
    )
    different = sf.least("re", "rw")
    unmatched = sf.col("re") - different
    failing = ~sf.col("unseen") & ~settled
    classed = per_id.select(
        "*",
        sf.when(~settled, different).otherwise(0).alias("different"),
        sf.when(sf.col("unseen"), unmatched).otherwise(0).alias("not_yet_emitted"),
        sf.when(failing, unmatched).otherwise(0).alias("missing"),
        sf.when(~settled, sf.col("rw") - different).otherwise(0).alias("extra"),
        sf.when(settled, sf.col("re") + sf.col("rw") - different)
        .otherwise(0)
        .alias("order_dependent"),
    ).cache()
    try:
        names = ("missing", "extra", "different", "not_yet_emitted", "order_dependent")
        sums = classed.agg(
            sf.sum("ok2").alias("ok2"), *(sf.sum(n).alias(n) for n in names)
        ).collect()[0]
        found = _examples(classed, names, examples)
    finally:
        classed.unpersist()
    counts = {name: int(sums[name] or 0) for name in names}
    counts["duplicate"] = int(totals["dup"] or 0)  # type: ignore[index]
    return AuditReport(
        spec.name,
        expected=int(totals["e"] or 0),  # type: ignore[index]
        written=int(totals["w"] or 0),  # type: ignore[index]
        matched=int(totals["ok"] or 0) + int(sums["ok2"] or 0),  # type: ignore[index]
        counts={name: counts[name] for name in CLASSES},
        examples=found,
        lagging=behind,
    )


def _examples(classed: DataFrame, names: tuple[str, ...], limit: int) -> dict[str, list[str]]:
    """The first `limit` identities of each class, by key, described in one line each."""
    described = sf.format_string(
        "key=%s ts=%s left=%s right=%s",
        sf.coalesce(sf.col("i_key").cast("string"), sf.lit("-")),
        sf.col("i_ts"),
        sf.coalesce("i_left", sf.lit("-")),
        sf.coalesce("i_right", sf.lit("-")),
    )
    values = sf.format_string(" expected %s, written %s", sf.col("e_canon"), sf.col("w_canon"))
    parts = [
        classed.where(sf.col(name) > 0).select(
            sf.lit(name).alias("class"),
            (sf.concat(described, values) if name == "different" else described).alias("line"),
        )
        for name in names
    ]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    first = Window.partitionBy("class").orderBy("line")
    found: dict[str, list[str]] = {}
    for row in (
        union.withColumn("n", sf.row_number().over(first))
        .where(sf.col("n") <= limit)
        .orderBy("class", "n")
        .collect()
    ):
        found.setdefault(row["class"], []).append(row["line"])
    return found
