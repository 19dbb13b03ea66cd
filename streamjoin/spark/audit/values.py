"""A value in a form that is equal exactly when two values mean the same.

A field mapping's JSON comes from Spark's writer, the workers' from Python's: the same object may
be spelled differently (escaped non-ASCII, 1.0 vs 1.0E0, another key order). Values whose bytes
differ are decoded with the output topic's serde and written again as sorted JSON (their repr
when JSON cannot hold them); only those rows go through Python.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgspec
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from streamjoin.dsl.serdes import Serde, SerdeError
from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.shipping import ship

__all__ = ("canonical_text", "canonical_values")


def canonical_text(serde: Serde, raw: bytes | None) -> str | None:
    """The canonical text of a value (None for a tombstone; the bytes in hex for a value the
    serde cannot decode)."""
    if raw is None:
        return None
    try:
        value = serde.deserialize(raw)
    except SerdeError:
        return f"undecodable {raw.hex()}"
    try:
        return json.dumps(msgspec.to_builtins(value), sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


class _Canonical:
    def __init__(self, serde: Serde) -> None:
        self.serde = serde

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            texts = [canonical_text(self.serde, raw) for raw in batch.column("value").to_pylist()]
            yield batch.append_column("canon", pa.array(texts, pa.string()))


def canonical_values(spec: JoinSpec, rows: DataFrame) -> DataFrame:
    """`rows` (with the output topic's `value`) with `canon`, its canonical text."""
    run = ship(
        _Canonical(spec.into.value_serde),
        f"the serde of topic {spec.into.name!r}",
        [spec.into.value_type],
    )
    schema = StructType([*rows.schema.fields, StructField("canon", StringType())])
    return rows.mapInArrow(run, schema)
