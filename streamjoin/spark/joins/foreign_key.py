"""The foreign-key join (KIP-213) over history, as the worker's two halves run it
(runtime/joins/foreign_key.py) with the subscription and response topics between them, each
update's consequences complete before the next update (the processing order of `order.py`).

A left update u (key k; fk(v) = the right key its value names, none for a tombstone or when
the extractor returns None) replaces k's previous value (old fk: fk_old), and with r = the right
table's value for fk(v) just before u:
- fk(v) set, r present: (v, r) at max(u.ts, r.ts);
- fk(v) set, r absent: a left join emits (v, None) at u.ts; an inner join a tombstone at u.ts if
  fk_old was set and different (its old result goes), else nothing;
- no fk(v), inner join, fk_old set: a tombstone at max(u.ts, ts of the right value of fk_old);
- no fk(v), left join: (v, None) at u.ts for a value, a tombstone at u.ts for a tombstone of a
  key that had a value; else nothing.
A right update w (key f) reaches every left key whose current value names f: (value, w) at w.ts,
or for a right tombstone (value, None) in a left join and a tombstone in an inner one.

The foreign key is the user's function: it runs in Python workers; a value it fails on is a bad
record, dropped when `skip_failures` (the worker dead-letters it and does not apply it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf
from pyspark.sql.types import BinaryType, BooleanType, StructField, StructType

from streamjoin.dsl.serdes import Serde, SerdeError
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.steps import StepError
from streamjoin.spark.joins.columns import joined, source_of
from streamjoin.spark.joins.stream_table import RECORD_COLUMNS, latest_before
from streamjoin.spark.order import POSITION, after
from streamjoin.spark.shipping import ship

__all__ = ("foreign_key_join",)


class _ForeignKeys:
    """Adds `fk` (the serialised right key each value names; null for a tombstone or none) and
    `bad` (the extractor or a serde failed: dropped with `skip_failures`, else raised)."""

    def __init__(self, extract: Any, values: Serde, keys: Serde, skip_failures: bool) -> None:
        self.extract, self.values, self.keys = extract, values, keys
        self.skip_failures = skip_failures

    def _fk(self, raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        value = self.values.deserialize(raw)
        try:
            fk = self.extract(value)
        except Exception as exc:
            raise StepError(f"foreign_key failed: {type(exc).__name__}: {exc}") from exc
        return None if fk is None else self.keys.serialize(fk)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys: list[bytes | None] = []
            bad: list[bool] = []
            for raw in batch.column("value").to_pylist():
                try:
                    keys.append(self._fk(raw))
                    bad.append(False)
                except (SerdeError, StepError):
                    if not self.skip_failures:
                        raise
                    keys.append(None)
                    bad.append(True)
            with_fk = batch.append_column("fk", pa.array(keys, pa.binary()))
            flags = pa.array(bad, pa.bool_())
            yield with_fk.append_column("bad", flags).filter(pa.compute.invert(flags))


def _with_foreign_keys(spec: JoinSpec, left: DataFrame, skip_failures: bool) -> DataFrame:
    fk = spec.foreign_key
    assert fk is not None
    run = _ForeignKeys(
        fk.extract, fk.left_table.value_serde, fk.right_table.key_serde, skip_failures
    )
    shipped = ship(
        run,
        f"the foreign_key of join {spec.name!r}",
        [fk.extract, fk.left_table.value_type, fk.right_table.value_type],
    )
    schema = StructType(
        [*left.schema.fields, StructField("fk", BinaryType()), StructField("bad", BooleanType())]
    )
    return left.mapInArrow(shipped, schema).drop("bad")


def _table_source(state: str) -> Column:
    return sf.concat_ws(
        ":",
        f"{state}.topic",
        sf.col(f"{state}.partition").cast("string"),
        sf.col(f"{state}.offset").cast("string"),
    )


def _left_caused(spec: JoinSpec, updates: DataFrame, right: DataFrame, response: str) -> DataFrame:
    """JOINED_COLUMNS of what each left update emits."""
    inner = spec.how == "inner"
    by_key = Window.partitionBy("partition", "key").orderBy(POSITION)
    marked = updates.withColumn("fk_old", sf.lag("fk").over(by_key)).withColumn(
        "had_value", sf.coalesce(sf.lag(sf.col("value").isNotNull()).over(by_key), sf.lit(False))
    )
    rights = right.withColumnRenamed("key", "_f")
    marked = latest_before(marked.withColumn("_f", sf.col("fk")), rights, ("_f",), "r").drop("_f")
    marked = latest_before(marked.withColumn("_f", sf.col("fk_old")), rights, ("_f",), "r_old")
    marked = marked.drop("_f")
    new_fk, old_fk = sf.col("fk"), sf.col("fk_old")
    r_present = sf.coalesce(sf.col("r.value").isNotNull(), sf.lit(False))
    changed = old_fk.isNotNull() & ~old_fk.eqNullSafe(new_fk)
    has_value = sf.col("value").isNotNull()
    ts = sf.col("timestamp")
    old_right_ts = sf.when(sf.col("r_old.value").isNotNull(), sf.col("r_old.timestamp"))
    # (kind, timestamp): 1 joined, 2 with None, 3 tombstone, null nothing
    kind = sf.when(new_fk.isNull() & changed & sf.lit(inner), 3)
    timestamp = sf.when(new_fk.isNull() & changed & sf.lit(inner), sf.greatest(ts, old_right_ts))
    if inner:
        kind = kind.when(new_fk.isNotNull() & r_present, 1).when(new_fk.isNotNull() & changed, 3)
    else:
        kind = (
            kind.when(new_fk.isNotNull() & r_present, 1)
            .when(has_value, 2)
            .when(sf.col("had_value"), 3)
        )
    timestamp = timestamp.when(r_present & new_fk.isNotNull(), sf.greatest(ts, "r.timestamp"))
    emitted = marked.withColumn("_kind", kind).withColumn("_ts", timestamp.otherwise(ts))
    emitted = emitted.where(sf.col("_kind").isNotNull())
    joined_right = sf.col("_kind") == 1
    return emitted.select(
        *joined(
            sf.col("key"),
            sf.col("_ts"),
            sf.col("partition"),
            sf.when(sf.col("_kind") != 3, source_of()),
            sf.when(
                joined_right,
                sf.concat_ws(
                    ":",
                    sf.lit(response),
                    sf.col("partition").cast("string"),
                    sf.col("r.offset").cast("string"),
                ),
            ),
            sf.when(sf.col("_kind") != 3, sf.col("value")),
            sf.when(joined_right, sf.col("r.value")),
            after(sf.col(POSITION), 0),
            sf.col("_kind") == 3,
        )
    )


def _right_caused(spec: JoinSpec, updates: DataFrame, right: DataFrame, response: str) -> DataFrame:
    """JOINED_COLUMNS of what each right update emits to the left keys naming it."""
    by_key = Window.partitionBy("partition", "key").orderBy(POSITION)
    # A subscription lasts until the key's next update, whatever that names.
    spans = updates.select(
        *(sf.col(c).alias(f"l_{c}") for c in (*RECORD_COLUMNS, "fk")),
        sf.lead(POSITION).over(by_key).alias("l_until"),
    ).where(sf.col("l_fk").isNotNull())
    w_pos = right[POSITION]
    reached = spans.join(
        right,
        (spans["l_fk"] == right["key"])
        & (spans[f"l_{POSITION}"] < w_pos)
        & (spans["l_until"].isNull() | (w_pos < spans["l_until"])),
    )
    present = sf.col("value").isNotNull()
    tombstone = ~present if spec.how == "inner" else sf.lit(False)
    return reached.select(
        *joined(
            sf.col("l_key"),
            sf.col("timestamp"),
            sf.col("l_partition"),
            sf.when(~tombstone, source_of("l_")),
            sf.when(
                present,
                sf.concat_ws(
                    ":",
                    sf.lit(response),
                    sf.col("l_partition").cast("string"),
                    sf.col("offset").cast("string"),
                ),
            ),
            sf.when(~tombstone, sf.col("l_value")),
            sf.col("value"),
            after(w_pos, 0),
            tombstone,
        )
    )


def foreign_key_join(
    spec: JoinSpec, left: DataFrame, right: DataFrame, *, skip_failures: bool
) -> DataFrame:
    """JOINED_COLUMNS (tombstones marked) of the foreign-key join of `spec` (its left half's
    spec) over its left and right tables' updates (RECORD_SCHEMA and `pos`)."""
    fk = spec.foreign_key
    assert fk is not None and fk.side == "left"
    left = left.where(sf.col("key").isNotNull()).select(*RECORD_COLUMNS)
    right = right.where(sf.col("key").isNotNull()).select(*RECORD_COLUMNS)
    updates = _with_foreign_keys(spec, left, skip_failures)
    response = fk.response.name
    return _left_caused(spec, updates, right, response).unionByName(
        _right_caused(spec, updates, right, response)
    )
