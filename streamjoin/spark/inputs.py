"""Where a batch job's topics come from: Kafka (offset ranges planned from high watermarks) or a
Parquet archive per topic, optionally narrowed to a time range."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.spark.archive import read_archive
from streamjoin.spark.kafka.io import read_ranges
from streamjoin.spark.kafka.offsets import OffsetRange, OffsetSelection, plan_ranges

__all__ = ("Sources", "TimeRange", "TopicInputs", "parse_instant", "read_topics")


def parse_instant(text: str) -> int:
    """Milliseconds since the epoch from an int (ms) or an ISO-8601 time (UTC unless it says)."""
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise ConfigurationError(
            f"time {text!r}: give epoch milliseconds or an ISO-8601 time such as "
            "2024-05-01T00:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Record timestamps [from_ms, to_ms); None leaves that end open."""

    from_ms: int | None = None
    to_ms: int | None = None

    def __post_init__(self) -> None:
        if self.from_ms is not None and self.to_ms is not None and self.from_ms >= self.to_ms:
            raise ConfigurationError(
                f"the time range is empty: --from {self.from_ms} is not before --to {self.to_ms}"
            )

    def widened(self, margin_ms: int) -> TimeRange:
        return TimeRange(
            None if self.from_ms is None else self.from_ms - margin_ms,
            None if self.to_ms is None else self.to_ms + margin_ms,
        )

    def contains(self, timestamp: Column) -> Column:
        condition = sf.lit(True)
        if self.from_ms is not None:
            condition = condition & (timestamp >= self.from_ms)
        if self.to_ms is not None:
            condition = condition & (timestamp < self.to_ms)
        return condition


@dataclass(frozen=True, slots=True)
class Sources:
    """Kafka at `bootstrap` for every topic without an archive; `offsets` narrows topics read
    from Kafka or from archives alike."""

    bootstrap: KafkaTarget | None = None
    archives: Mapping[str, str] = field(default_factory=dict)
    offsets: Sequence[OffsetSelection] = ()


@dataclass(frozen=True, slots=True)
class TopicInputs:
    frames: dict[str, DataFrame]
    kafka_ranges: list[OffsetRange]
    """The offset ranges read from Kafka (empty for archived topics)."""


def _narrowed(frame: DataFrame, topic: str, selections: Sequence[OffsetSelection]) -> DataFrame:
    for s in selections:
        if s.topic != topic:
            continue
        applies = sf.lit(True) if s.partition is None else sf.col("partition") == s.partition
        if s.start is not None:
            frame = frame.where(~applies | (sf.col("offset") >= s.start))
        if s.end is not None:
            frame = frame.where(~applies | (sf.col("offset") < s.end))
    return frame


def read_topics(
    spark: SparkSession, sources: Sources, topics: Iterable[str], time_range: TimeRange
) -> TopicInputs:
    """RECORD_SCHEMA frames of `topics`, each from its archive or from Kafka."""
    wanted = sorted(set(topics))
    unknown = sorted({s.topic for s in sources.offsets} - set(wanted))
    if unknown:
        raise ConfigurationError(
            f"offsets given for {', '.join(map(repr, unknown))}, which the job does not read "
            f"(it reads {', '.join(map(repr, wanted))})"
        )
    from_kafka = [t for t in wanted if t not in sources.archives]
    ranges: list[OffsetRange] = []
    if from_kafka:
        if not sources.bootstrap:
            raise ConfigurationError(
                f"{', '.join(map(repr, from_kafka))} must be read from Kafka: pass --bootstrap "
                "(or --archive TOPIC=PATH for each)"
            )
        selections = [s for s in sources.offsets if s.topic in from_kafka]
        ranges = plan_ranges(sources.bootstrap, from_kafka, selections)
    frames: dict[str, DataFrame] = {}
    for topic in wanted:
        if topic in sources.archives:
            frame = read_archive(
                spark,
                sources.archives[topic],
                topic,
                from_ms=time_range.from_ms,
                to_ms=time_range.to_ms,
            )
            frames[topic] = _narrowed(frame, topic, sources.offsets)
        else:
            assert sources.bootstrap is not None
            own = [r for r in ranges if r.topic == topic]
            frames[topic] = read_ranges(
                spark, sources.bootstrap, own, from_ms=time_range.from_ms, to_ms=time_range.to_ms
            )
    return TopicInputs(frames, ranges)
