"""Read topics into, and write records from, Spark DataFrames.

Reads use Spark's official Kafka connector when it is on the classpath (a cluster usually has
it) and streamjoin's own Python data source otherwise; both read exactly the planned offset
ranges and give RECORD_SCHEMA rows. Writes always use streamjoin's source: the official sink
cannot set record timestamps, and a join's output timestamp is part of its result.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from streamjoin.kafka.client_properties import client_properties
from streamjoin.kafka.connection import KafkaConnection, KafkaTarget, connect
from streamjoin.kafka.security_shipping import ship
from streamjoin.spark.kafka.offsets import OffsetRange, ranges_to_json
from streamjoin.spark.kafka.stream_source import KafkaStreamDataSource
from streamjoin.spark.records import OUTPUT_SCHEMA, RECORD_SCHEMA

__all__ = (
    "connector_options",
    "official_connector_available",
    "read_ranges",
    "read_stream",
    "write_topic",
)

logger = logging.getLogger(__name__)

_OFFICIAL_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def official_connector_available(spark: SparkSession) -> bool:
    """Whether Spark's own Kafka connector can be loaded by the driver's JVM."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(_OFFICIAL_PROVIDER, False, loader)
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException in its own error
        return False
    return True


_SOURCE_NAMES: weakref.WeakKeyDictionary[SparkSession, str] = weakref.WeakKeyDictionary()


def _source_name(spark: SparkSession) -> str:
    """The name under which `spark` knows the Python Kafka source, registering it first.

    Registrations are per session, yet once any session has used a name Spark refuses to
    register it in another one (DATA_SOURCE_ALREADY_EXISTS) while that one still cannot find
    it; so each session gets the source under a name of its own.
    """
    name = _SOURCE_NAMES.get(spark)
    if name is None:
        name = f"{KafkaStreamDataSource.name()}_{len(_SOURCE_NAMES)}_{id(spark):x}"
        source = type(
            KafkaStreamDataSource.__name__,
            (KafkaStreamDataSource,),
            {"name": classmethod(lambda cls: name)},
        )
        spark.dataSource.register(source)
        _SOURCE_NAMES[spark] = name
    return name


@contextmanager
def _active(spark: SparkSession) -> Iterator[None]:
    """Make `spark` the JVM's active session for a while: a write looks its data source up in
    the active session, which need not be the one the DataFrame belongs to."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    sessions = jvm.org.apache.spark.sql.SparkSession
    previous = sessions.getActiveSession()
    sessions.setActiveSession(spark._jsparkSession)
    try:
        yield
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()


def read_ranges(
    spark: SparkSession,
    bootstrap: KafkaTarget,
    ranges: Sequence[OffsetRange],
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
) -> DataFrame:
    """The records of `ranges`, with from_ms <= timestamp < to_ms when given."""
    kafka = connect(bootstrap)
    if official_connector_available(spark):
        frame = _read_official(spark, kafka, ranges)
        if from_ms is not None:
            frame = frame.where(sf.col("timestamp") >= from_ms)
        if to_ms is not None:
            frame = frame.where(sf.col("timestamp") < to_ms)
        return frame
    reader = (
        spark.read.format(_source_name(spark))
        .option("bootstrap", kafka.bootstrap)
        .options(**ship(kafka.security))
        .option("ranges", ranges_to_json(ranges))
    )
    if from_ms is not None:
        reader = reader.option("from_ms", str(from_ms))
    if to_ms is not None:
        reader = reader.option("to_ms", str(to_ms))
    return reader.load()


def connector_options(kafka: KafkaConnection) -> dict[str, str]:
    """How Spark's Kafka connector reaches the cluster (address, TLS and SASL): every `kafka.*`
    client setting of the reads (batch and streaming) is made here."""
    return {
        "kafka.bootstrap.servers": kafka.bootstrap,
        **{f"kafka.{k}": v for k, v in client_properties(kafka.security).items()},
    }


def _as_records(frame: DataFrame) -> DataFrame:
    """The connector's rows in RECORD_SCHEMA (its timestamps are Spark timestamps)."""
    return frame.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        sf.unix_millis("timestamp").alias("timestamp"),
        "headers",
    )


def read_stream(
    spark: SparkSession,
    bootstrap: KafkaTarget,
    topic: str,
    *,
    official: bool,
    max_records_per_batch: int | None = None,
) -> DataFrame:
    """`topic` as a streaming DataFrame of RECORD_SCHEMA rows from its earliest offsets, through
    Spark's connector (`official`) or streamjoin's Python source; at most
    `max_records_per_batch` records per micro-batch when given."""
    kafka = connect(bootstrap)
    if official:
        reader = (
            spark.readStream.format("kafka")
            .options(**connector_options(kafka))
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("includeHeaders", "true")
        )
        if max_records_per_batch is not None:
            reader = reader.option("maxOffsetsPerTrigger", str(max_records_per_batch))
        return _as_records(reader.load())
    reader = (
        spark.readStream.format(_source_name(spark))
        .option("bootstrap", kafka.bootstrap)
        .options(**ship(kafka.security))
        .option("topics", topic)
    )
    if max_records_per_batch is not None:
        reader = reader.option("max_records_per_batch", str(max_records_per_batch))
    return reader.load()


def _read_official(
    spark: SparkSession, kafka: KafkaConnection, ranges: Sequence[OffsetRange]
) -> DataFrame:
    wanted = [r for r in ranges if r.size]
    if not wanted:
        return spark.createDataFrame([], RECORD_SCHEMA)
    starts: defaultdict[str, dict[str, int]] = defaultdict(dict)
    ends: defaultdict[str, dict[str, int]] = defaultdict(dict)
    for r in wanted:
        starts[r.topic][str(r.partition)] = r.start
        ends[r.topic][str(r.partition)] = r.end
    logger.info("reading %d partition ranges with Spark's Kafka connector", len(wanted))
    frame = (
        spark.read.format("kafka")
        .options(**connector_options(kafka))
        .option("assign", json.dumps({t: [int(p) for p in ps] for t, ps in starts.items()}))
        .option("startingOffsets", json.dumps(starts))
        .option("endingOffsets", json.dumps(ends))
        .option("includeHeaders", "true")
        .load()
    )
    return _as_records(frame)


def write_topic(records: DataFrame, bootstrap: KafkaTarget, topic: str) -> None:
    """Produce `records` (OUTPUT_SCHEMA columns) to `topic`, which must exist; returns once
    every record is acknowledged."""
    spark = records.sparkSession
    name = _source_name(spark)
    with _active(spark):
        (
            records.select(*OUTPUT_SCHEMA.fieldNames())
            .write.format(name)
            .option("bootstrap", connect(bootstrap).bootstrap)
            .options(**ship(connect(bootstrap).security))
            .option("topic", topic)
            .mode("append")
            .save()
        )
