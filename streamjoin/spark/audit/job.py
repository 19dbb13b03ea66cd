"""Audit: recompute a join on Spark and diff it, record by record, against what the streaming
workers wrote to the output topic.

Records are matched exactly by their provenance headers (`streamjoin.left` / `.right` =
"topic:partition:offset"): the expected result with the same sources is the same result. Every
difference gets a reason:

- duplicate: the same result written more than once (at-least-once replays; harmless),
- late_dropped: the streaming job dropped a source record as late (outside its window plus
  grace), so a result is missing, or a non-match was written instead of a match,
- not_yet_emitted: a source is beyond the group's committed offset, or a non-match's window
  (plus grace) is still open at the stream time the committed offsets reached,
- wrong_value: the result exists but its key, timestamp or value differs,
- unexpected: a result the join cannot produce from its inputs,
- missing: none of the above explains it.

Missing, wrong_value and unexpected fail the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as sf

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.audit.sources import source_status, task_stream_times
from streamjoin.spark.audit.values import same_values
from streamjoin.spark.inputs import Sources, TimeRange, read_topics
from streamjoin.spark.pipeline import JoinOptions, join_results
from streamjoin.spark.records import header_value
from streamjoin.spark.stream_time import with_lateness

__all__ = ("CLASSES", "FAILING", "AuditReport", "audit")

CLASSES = ("missing", "duplicate", "late_dropped", "not_yet_emitted", "wrong_value", "unexpected")
FAILING = ("missing", "wrong_value", "unexpected")


@dataclass(frozen=True, slots=True)
class AuditReport:
    join: str
    expected: int
    """Results the recomputation gives in the time range."""
    written: int
    """Records the streaming job wrote in the time range (duplicates included)."""
    matched: int
    """Expected results written with the right key, timestamp and value."""
    counts: dict[str, int]
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(self.counts[name] for name in FAILING)


def _written(output: DataFrame, time_range: TimeRange) -> DataFrame:
    """The output records in range, one row per distinct source pair with its copy count."""
    tagged = output.where(time_range.contains(sf.col("timestamp"))).select(
        header_value(sf.col("headers"), LEFT_SOURCE_HEADER).cast("string").alias("a_left"),
        header_value(sf.col("headers"), RIGHT_SOURCE_HEADER).cast("string").alias("a_right"),
        sf.col("key").alias("a_key"),
        sf.col("timestamp").alias("a_ts"),
        sf.col("value").alias("a_value"),
    )
    return tagged.groupBy("a_left", "a_right").agg(
        sf.count(sf.lit(1)).alias("a_copies"),
        sf.first("a_key").alias("a_key"),
        sf.first("a_ts").alias("a_ts"),
        sf.first("a_value").alias("a_value"),
    )


def _partner_checks(results: DataFrame, status: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per left (and per right) source: how many partners it has, and how many of them the
    streaming job could not have seen (late or not yet processed)."""
    pairs = results.where(sf.col("left_source").isNotNull() & sf.col("right_source").isNotNull())
    unseen = ~sf.col("processed") | sf.col("late")

    def per(own: str, other: str) -> DataFrame:
        joined = pairs.join(status, pairs[other] == status["source"], "left")
        return joined.groupBy(sf.col(own).alias("source")).agg(
            sf.count(sf.lit(1)).alias("partners"),
            sf.sum(sf.when(unseen, 1).otherwise(0)).alias("unseen_partners"),
        )

    return per("left_source", "right_source"), per("right_source", "left_source")


def _classify(spec: JoinSpec, diff: DataFrame) -> Column:
    window = spec.window
    assert window is not None
    expected, written = sf.col("e_present"), sf.col("a_copies").isNotNull()
    non_match = sf.col("left_source").isNull() | sf.col("right_source").isNull()
    unprocessed = ~sf.coalesce(sf.col("l_processed"), sf.lit(True)) | ~sf.coalesce(
        sf.col("r_processed"), sf.lit(True)
    )
    late = sf.coalesce(sf.col("l_late"), sf.lit(False)) | sf.coalesce(
        sf.col("r_late"), sf.lit(False)
    )
    window_open = non_match & (
        sf.col("timestamp") + window.retention_ms
        >= sf.coalesce(sf.col("task_stream_time"), sf.lit(-1))
    )
    same_record = (sf.col("key").eqNullSafe(sf.col("a_key"))) & (
        sf.col("timestamp") == sf.col("a_ts")
    )
    partners_unseen = (sf.col("partners") > 0) & (sf.col("partners") == sf.col("unseen_partners"))
    return (
        sf.when(expected & written & same_record & (sf.col("value") == sf.col("a_value")), "ok")
        .when(expected & written & same_record, "compare_value")
        .when(expected & written, "wrong_value")
        .when(expected & unprocessed, "not_yet_emitted")
        .when(expected & late, "late_dropped")
        .when(expected & window_open, "not_yet_emitted")
        .when(expected, "missing")
        .when(non_match & partners_unseen, "late_dropped")
        .otherwise("unexpected")
    )


def audit(
    spark: SparkSession,
    spec: JoinSpec,
    group: str,
    sources: Sources,
    time_range: TimeRange | None = None,
    *,
    options: JoinOptions | None = None,
    examples: int = 5,
) -> AuditReport:
    """Diff the streaming output of `spec` against its recomputation, for results with
    timestamps in `time_range`. `group` is the workers' consumer group (the app id)."""
    time_range = time_range or TimeRange()
    inputs = read_topics(spark, sources, [*spec.input_topics, spec.into.name], TimeRange())
    left, right = inputs.frames[spec.left.name], inputs.frames[spec.right.name]
    input_ranges = [r for r in inputs.kafka_ranges if r.topic in spec.input_topics]
    marked = with_lateness(spec, left, right)
    status = source_status(spark, sources.bootstrap, group, input_ranges, marked).cache()
    results = join_results(spec, left, right, options or JoinOptions())
    results = results.drop("left_value", "right_value").cache()
    by_left, by_right = _partner_checks(results, status)
    expected = results.where(time_range.contains(sf.col("timestamp"))).withColumn(
        "e_present", sf.lit(True)
    )
    written = _written(inputs.frames[spec.into.name], time_range)
    diff = expected.join(
        written,
        expected["left_source"].eqNullSafe(written["a_left"])
        & expected["right_source"].eqNullSafe(written["a_right"]),
        "full_outer",
    )
    diff = (
        diff.withColumn("left_source", sf.coalesce("left_source", "a_left"))
        .withColumn("right_source", sf.coalesce("right_source", "a_right"))
        .withColumn("e_present", sf.coalesce("e_present", sf.lit(False)))
    )
    for side, column in (("l", "left_source"), ("r", "right_source")):
        side_status = status.select(
            sf.col("source").alias(f"{side}_source"),
            sf.col("late").alias(f"{side}_late"),
            sf.col("processed").alias(f"{side}_processed"),
        )
        diff = diff.join(side_status, diff[column] == side_status[f"{side}_source"], "left")
    partners = by_left.unionByName(by_right)
    diff = diff.join(
        partners,
        sf.coalesce(diff["left_source"], diff["right_source"]) == partners["source"],
        "left",
    )
    stream_times = task_stream_times(status)
    diff = diff.join(stream_times, "task_partition", "left")
    diff = diff.withColumn("status", _classify(spec, diff))
    diff = same_values(spec, diff).cache()
    try:
        return _report(spec, diff, examples)
    finally:
        diff.unpersist()
        results.unpersist()
        status.unpersist()


def _report(spec: JoinSpec, diff: DataFrame, examples: int) -> AuditReport:
    copies = sf.coalesce("a_copies", sf.lit(0))
    by_status = (
        diff.groupBy("status")
        .agg(
            sf.count(sf.lit(1)).alias("n"),
            sf.sum(sf.when(sf.col("e_present"), 1).otherwise(0)).alias("expected"),
            sf.sum(copies).alias("written"),
            sf.sum(sf.greatest(copies - 1, sf.lit(0))).alias("duplicates"),
        )
        .collect()
    )
    counted = {row["status"]: int(row["n"]) for row in by_status}
    counts = {name: counted.get(name, 0) for name in CLASSES}
    counts["duplicate"] = sum(int(row["duplicates"]) for row in by_status)
    duplicated = diff.where(sf.col("a_copies") > 1).withColumn("status", sf.lit("duplicate"))
    described = (
        diff.where(sf.col("status") != "ok")
        .unionByName(duplicated)
        .select(
            "status",
            sf.format_string(
                "left=%s right=%s ts=%s",
                sf.coalesce("left_source", sf.lit("-")),
                sf.coalesce("right_source", sf.lit("-")),
                sf.coalesce("timestamp", "a_ts"),
            ).alias("record"),
        )
    )
    first = Window.partitionBy("status").orderBy("record")
    found: dict[str, list[str]] = {}
    for row in (
        described.withColumn("n", sf.row_number().over(first))
        .where(sf.col("n") <= examples)
        .orderBy("status", "n")
        .collect()
    ):
        found.setdefault(row["status"], []).append(row["record"])
    return AuditReport(
        spec.name,
        expected=sum(int(row["expected"]) for row in by_status),
        written=sum(int(row["written"]) for row in by_status),
        matched=counted.get("ok", 0),
        counts=counts,
        examples=found,
    )
