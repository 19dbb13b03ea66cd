"""The stream-global-table join over history, as the worker runs it (runtime/joins/global_table.py)
in the processing order of `order.py`: each stream record looks up the key its `key=` gives in
the global table as it is when the record comes, that is after every update of the table's
topic (all its partitions) that comes before the record in that order. The output keeps the
stream record's key, timestamp and partition.

`key=` is the user's function (or field name): it runs in Python workers, with the worker's
rules for a record it fails on (`skip_failures`: dropped, as the worker dead-letters it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import BinaryType, StructField, StructType

from streamjoin.dsl.serdes import Serde, SerdeError
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.steps import KeyBy, StepError
from streamjoin.spark.joins.stream_table import RECORD_COLUMNS, latest_before, lookup_results
from streamjoin.spark.shipping import ship

__all__ = ("global_table_join",)

_LOOKUP = "_lookup"


class _LookupKeys:
    """Adds each record's table key (`key=` of its decoded value, serialised as the table's
    keys); a record it fails on raises, or is dropped when `skip_failures`."""

    def __init__(self, lookup: KeyBy, values: Serde, keys: Serde, skip_failures: bool) -> None:
        self.lookup, self.values, self.keys = lookup, values, keys
        self.skip_failures = skip_failures

    def _key(self, raw: bytes) -> bytes:
        return self.keys.serialize(self.lookup.key_of(self.values.deserialize(raw)))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys: list[bytes | None] = []
            for raw in batch.column("value").to_pylist():
                try:
                    keys.append(self._key(raw))
                except (SerdeError, StepError):
                    if not self.skip_failures:
                        raise
                    keys.append(None)
            column = pa.array(keys, pa.binary())
            yield batch.append_column(_LOOKUP, column).filter(column.is_valid())


def global_table_join(
    spec: JoinSpec, stream: DataFrame, table: DataFrame, *, skip_failures: bool
) -> DataFrame:
    """JOINED_COLUMNS of a global-table join over its stream's records (after its steps) and
    the table topic's records (RECORD_SCHEMA and `pos` both)."""
    assert spec.lookup is not None
    stream = stream.where(sf.col("value").isNotNull()).select(*RECORD_COLUMNS)
    run = _LookupKeys(spec.lookup, spec.left_value_serde, spec.right.key_serde, skip_failures)
    shipped = ship(
        run,
        f"the key= of join {spec.name!r}",
        [spec.lookup.key, spec.left.value_type, spec.right.value_type],
    )
    schema = StructType([*stream.schema.fields, StructField(_LOOKUP, BinaryType())])
    queries = stream.mapInArrow(shipped, schema)
    updates = table.where(sf.col("key").isNotNull()).withColumnRenamed("key", _LOOKUP)
    found = latest_before(queries, updates, (_LOOKUP,))
    return lookup_results(spec, found.drop(_LOOKUP), sf.col("key"))
