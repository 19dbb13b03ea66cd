"""Whether two output values differ in meaning, not just in bytes.

A field mapping's JSON comes from Spark's writer, the streaming job's from Python's: the same
object may be spelled differently (escaped non-ASCII, 1.0 vs 1.0E0). Values whose bytes differ
are decoded with the output topic's serde and compared as objects; only those rows go through
Python.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

from streamjoin.dsl.serdes import Serde, SerdeError
from streamjoin.dsl.spec import JoinSpec
from streamjoin.spark.shipping import ship

__all__ = ("same_values",)


class _CompareDecoded:
    def __init__(self, serde: Serde) -> None:
        self.serde = serde

    def _same(self, expected: bytes | None, written: bytes | None) -> bool:
        if expected is None or written is None:
            return expected is written
        try:
            return bool(self.serde.deserialize(expected) == self.serde.deserialize(written))
        except SerdeError:
            return False

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            verdicts = [
                "ok" if self._same(e, w) else "wrong_value"
                for e, w in zip(
                    batch.column("value").to_pylist(),
                    batch.column("a_value").to_pylist(),
                    strict=True,
                )
            ]
            index = batch.schema.get_field_index("status")
            yield batch.set_column(index, "status", pa.array(verdicts, pa.string()))


def same_values(spec: JoinSpec, diff: DataFrame) -> DataFrame:
    """`diff` with every "compare_value" status settled as "ok" or "wrong_value"."""
    undecided = sf.col("status") == "compare_value"
    compare = ship(
        _CompareDecoded(spec.into.value_serde),
        f"the serde of topic {spec.into.name!r}",
        [spec.into.value_type],
    )
    settled = diff.where(undecided).mapInArrow(compare, diff.schema)
    return diff.where(~undecided).unionByName(settled)
