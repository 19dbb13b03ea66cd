"""Kafka as a Spark data source on the Python Data Source API, with aiokafka.

Spark's own Kafka connector comes from Maven, which many machines cannot reach. This source
needs nothing but the Python packages streamjoin already has. Reading: the driver plans one
input partition per topic-partition offset range (from fetched high watermarks, see
`offsets.py`); each Spark task fetches its range with its own consumer on a private event loop
and yields Arrow batches. Writing: each task produces its rows with its own producer, keeping
each record's timestamp, headers and (when set) partition, and waits until all are
acknowledged.

Options (Spark lower-cases option names): `bootstrap`, `security_secret` (TLS and SASL, see
`streamjoin.kafka.security_shipping`), and for reading `ranges` (JSON from
`ranges_to_json`), optionally `from_ms`/`to_ms` (keep records with from <= timestamp < to);
for writing `topic`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from aiokafka import AIOKafkaConsumer
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import ConfigurationError, StreamJoinError
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.security_shipping import unship
from streamjoin.spark.kafka.offsets import OffsetRange, ranges_from_json
from streamjoin.spark.records import RECORD_SCHEMA, arrow_batch

__all__ = ("KafkaDataSource", "RangePartition", "fetch_range", "source_option")

_BATCH_RECORDS = 20_000
_STALL_S = 30.0
"""How long a range may yield nothing before the read fails (records below the planned end
must exist: the end was the partition's high watermark)."""


class RangePartition(InputPartition):
    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.range = offset_range


def source_option(options: Any, name: str) -> str:
    value = options.get(name)
    if not value:
        raise ConfigurationError(f"the streamjoin_kafka data source needs the option {name!r}")
    return str(value)


class _RangeReader(DataSourceReader):
    def __init__(self, options: Any) -> None:
        self.kafka = KafkaConnection(source_option(options, "bootstrap"), unship(options))
        self.ranges = [r for r in ranges_from_json(source_option(options, "ranges")) if r.size]
        self.from_ms = int(options["from_ms"]) if options.get("from_ms") else None
        self.to_ms = int(options["to_ms"]) if options.get("to_ms") else None

    def partitions(self) -> list[InputPartition]:
        return [RangePartition(r) for r in self.ranges] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return
        loop = asyncio.new_event_loop()
        try:
            yield from fetch_range(loop, self.kafka, partition.range, self.from_ms, self.to_ms)
        finally:
            loop.close()


def fetch_range(
    loop: asyncio.AbstractEventLoop,
    kafka: KafkaConnection,
    wanted: OffsetRange,
    from_ms: int | None,
    to_ms: int | None,
) -> Iterator[pa.RecordBatch]:
    tp = TopicPartition(wanted.topic, wanted.partition)
    consumer = loop.run_until_complete(_open_consumer(kafka, tp, wanted.start))
    try:
        position, idle_s = wanted.start, 0.0
        while position < wanted.end:
            fetched = loop.run_until_complete(
                consumer.getmany(tp, timeout_ms=500, max_records=_BATCH_RECORDS)
            ).get(tp, [])
            kept = [
                r
                for r in fetched
                if r.offset < wanted.end
                and (from_ms is None or r.timestamp >= from_ms)
                and (to_ms is None or r.timestamp < to_ms)
            ]
            if kept:
                yield _to_batch(wanted, kept)
            new_position = loop.run_until_complete(consumer.position(tp))
            idle_s = 0.0 if new_position > position else idle_s + 0.5
            if idle_s >= _STALL_S:
                raise StreamJoinError(
                    f"{wanted.topic}[{wanted.partition}]: no records after offset {position} "
                    f"for {_STALL_S:.0f}s, though the partition was planned up to {wanted.end}"
                )
            position = new_position
    finally:
        loop.run_until_complete(consumer.stop())


async def _open_consumer(
    kafka: KafkaConnection, tp: TopicPartition, start: int
) -> AIOKafkaConsumer:
    """A started consumer of `tp` at `start` (aiokafka clients must be made on their loop)."""
    consumer = kafka.consumer(
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 * 1024 * 1024,
        fetch_max_bytes=16 * 1024 * 1024,
    )
    await consumer.start()
    consumer.assign([tp])
    consumer.seek(tp, start)
    return consumer


def _to_batch(wanted: OffsetRange, records: list[Any]) -> pa.RecordBatch:
    return arrow_batch(
        {
            "key": [r.key for r in records],
            "value": [r.value for r in records],
            "topic": [wanted.topic] * len(records),
            "partition": [wanted.partition] * len(records),
            "offset": [r.offset for r in records],
            "timestamp": [r.timestamp for r in records],
            "headers": [[{"key": k, "value": v} for k, v in r.headers or ()] for r in records],
        }
    )


@dataclass(frozen=True, slots=True)
class _Written(WriterCommitMessage):
    records: int


class _TopicWriter(DataSourceArrowWriter):
    def __init__(self, options: Any) -> None:
        self.kafka = KafkaConnection(source_option(options, "bootstrap"), unship(options))
        self.topic = source_option(options, "topic")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
        loop = asyncio.new_event_loop()
        try:
            return _Written(loop.run_until_complete(self._produce(iterator)))
        finally:
            loop.close()

    async def _produce(self, batches: Iterator[pa.RecordBatch]) -> int:
        producer = self.kafka.producer(
            acks="all",
            linger_ms=5,
            max_batch_size=256 * 1024,
        )
        await producer.start()
        sent = 0
        try:
            for batch in batches:
                deliveries = []
                for row in batch.to_pylist():
                    headers = [(h["key"], h["value"]) for h in row.get("headers") or ()]
                    deliveries.append(
                        await producer.send(
                            self.topic,
                            row["value"],
                            key=row["key"],
                            partition=row.get("partition"),
                            timestamp_ms=row["timestamp"],
                            headers=headers,
                        )
                    )
                await asyncio.gather(*deliveries)
                sent += len(deliveries)
        finally:
            await producer.stop()
        return sent


class KafkaDataSource(DataSource):
    """`spark.read.format("streamjoin_kafka")` / `frame.write.format("streamjoin_kafka")`."""

    @classmethod
    def name(cls) -> str:
        return "streamjoin_kafka"

    def schema(self) -> StructType:
        return RECORD_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _RangeReader(self.options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return _TopicWriter(self.options)
