"""Kafka as a Spark *streaming* source on the Python Data Source API (PySpark 4.2+), for sessions
without Spark's own connector.

Spark keeps the offsets in the query's checkpoint, as {topic: {partition: next offset}}. Each
micro-batch ends at the partitions' fetched high watermarks (`offsets.plan_ranges`, which also
handles the embedded broker's end offsets), at most `max_records_per_batch` records past its
start; a partition that appears later starts at its log start. Under the AvailableNow trigger the
ends stop at the high watermarks seen when the query started. The records of one batch are
fetched per topic-partition range by the same reader as batch jobs (`source`).

Options (lower-cased by Spark): `bootstrap`, `topics` (comma-separated), optionally
`max_records_per_batch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.security_shipping import unship
from streamjoin.spark.kafka.offsets import OffsetRange, plan_ranges
from streamjoin.spark.kafka.source import (
    KafkaDataSource,
    RangePartition,
    fetch_range,
    source_option,
)

__all__ = ("KafkaStreamDataSource", "StreamOffsets", "bounded_ends")

StreamOffsets = dict[str, dict[str, int]]
"""{topic: {partition (as text, JSON keys are text): next offset to read}}."""


def bounded_ends(
    starts: StreamOffsets, available: Sequence[OffsetRange], max_records: int | None
) -> StreamOffsets:
    """The end offsets of the next batch: every partition up to its available end, or, with
    `max_records`, at most that many records in all, shared out evenly between the partitions
    that have records (a partition's unused share goes to the others)."""
    begin = {
        (r.topic, r.partition): max(starts.get(r.topic, {}).get(str(r.partition), r.start), r.start)
        for r in available
    }
    ends = {(r.topic, r.partition): max(begin[r.topic, r.partition], r.end) for r in available}
    if max_records is not None:
        room = {tp: ends[tp] - begin[tp] for tp in ends}
        taken = dict.fromkeys(ends, 0)
        budget = max_records
        while budget > 0:
            open_ = [tp for tp in sorted(room) if room[tp] > taken[tp]]
            if not open_:
                break
            share = max(1, budget // len(open_))
            for tp in open_:
                step = min(share, room[tp] - taken[tp], budget)
                taken[tp] += step
                budget -= step
        ends = {tp: begin[tp] + taken[tp] for tp in ends}
    result: StreamOffsets = {}
    for (topic, partition), end in sorted(ends.items()):
        result.setdefault(topic, {})[str(partition)] = end
    return result


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Any) -> None:
        self.kafka = KafkaConnection(source_option(options, "bootstrap"), unship(options))
        self.topics = sorted(t for t in source_option(options, "topics").split(",") if t)
        limit = options.get("max_records_per_batch")
        self.max_records = int(limit) if limit else None
        self.target: list[OffsetRange] | None = None

    def _available(self) -> list[OffsetRange]:
        if self.target is not None:
            return self.target
        return plan_ranges(self.kafka, self.topics)

    def initialOffset(self) -> StreamOffsets:  # noqa: N802 - Spark's name
        """Every partition's log start."""
        starts: StreamOffsets = {}
        for r in self._available():
            starts.setdefault(r.topic, {})[str(r.partition)] = r.start
        return starts

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        return ReadAllAvailable() if self.max_records is None else ReadMaxRows(self.max_records)

    def latestOffset(self, start: StreamOffsets, limit: ReadLimit) -> StreamOffsets:  # noqa: N802
        cap = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return bounded_ends(start, self._available(), cap)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.target = plan_ranges(self.kafka, self.topics)

    def partitions(self, start: StreamOffsets, end: StreamOffsets) -> list[InputPartition]:
        ranges = [
            OffsetRange(topic, int(p), start.get(topic, {}).get(p, stop), stop)
            for topic, stops in sorted(end.items())
            for p, stop in sorted(stops.items(), key=lambda item: int(item[0]))
        ]
        return [RangePartition(r) for r in ranges if r.size]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        loop = asyncio.new_event_loop()
        try:
            yield from fetch_range(loop, self.kafka, partition.range, None, None)
        finally:
            loop.close()


class KafkaStreamDataSource(KafkaDataSource):
    """The Kafka data source for batch reads and writes, and `spark.readStream` too."""

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return _StreamReader(self.options)
