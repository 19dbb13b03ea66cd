"""Kafka records as Spark rows: one schema for topics read from Kafka, Parquet archives and
join inputs, so every source looks the same to the join.

Timestamps stay Kafka's milliseconds since the epoch as a long (Spark's own timestamp type is
microseconds): no conversion, no rounding, the same numbers as in the streaming runtime.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

__all__ = (
    "ARROW_RECORD_SCHEMA",
    "HEADERS_TYPE",
    "OUTPUT_SCHEMA",
    "RECORD_SCHEMA",
    "arrow_batch",
    "header_value",
    "source_id",
)

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)

RECORD_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField("headers", HEADERS_TYPE),
    ]
)
"""A topic's records: what Kafka reads give, what archives store."""

OUTPUT_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("timestamp", LongType()),
        StructField("partition", IntegerType()),
        StructField("headers", HEADERS_TYPE),
    ]
)
"""Records to write to a topic: `partition` null means "by key, as Kafka's default
partitioner" (the streaming runtime sets it only for records without a key)."""

_ARROW_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
ARROW_RECORD_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("headers", _ARROW_HEADERS),
    ]
)


def arrow_batch(columns: dict[str, list[Any]]) -> pa.RecordBatch:
    """A record batch in RECORD_SCHEMA from column lists."""
    return pa.RecordBatch.from_pydict(columns, schema=ARROW_RECORD_SCHEMA)


def source_id(frame: DataFrame) -> Column:
    """ "topic:partition:offset" of each record: the streaming runtime's provenance header."""
    return sf.concat_ws(":", frame["topic"], frame["partition"].cast("string"), frame["offset"])


def header_value(headers: Column, name: str) -> Column:
    """The value of the first header called `name` (null when there is none)."""
    found = sf.filter(headers, lambda h: h["key"] == sf.lit(name))
    return sf.when(sf.size(found) > 0, found[0]["value"])
