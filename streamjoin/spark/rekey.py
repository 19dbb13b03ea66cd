"""`key_by` on Spark: the records re-keyed in Python workers (the repartition task's own steps,
key function and serdes, runtime/tasks/repartition.py) and given the partition Kafka's default
partitioner picks for the new key, instead of reading the repartition topic. The join's shuffle
by key then brings each key's records together, as the repartition topic does for the workers.

Re-keyed records keep their timestamp, headers and place in the processing order (`pos`); their
offset in the repartition topic is not known (null). A record the steps or the key function
fail on, or with a negative timestamp, is dropped when `skip_failures` (the worker
dead-letters it), else it fails the job.

Also here: the partition of a join's result in its output topic, for a join reading it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from streamjoin.dsl.serdes import SerdeError
from streamjoin.dsl.spec import Repartition
from streamjoin.dsl.steps import Filter, MapValues, StepChain, StepError
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.spark.shipping import ship

__all__ = ("keyed_partitions", "rekey")


class _Rekey:
    def __init__(self, repartition: Repartition, partitions: int, skip_failures: bool) -> None:
        source = repartition.source
        self.chain = StepChain(repartition.steps, source.value_serde, repartition.topic.value_serde)
        self.decode = source.value_serde.deserialize
        self.key_by = repartition.key_by
        self.topic = repartition.topic.name
        self.partitions = partitions
        self.skip_failures = skip_failures

    def _rekeyed(self, raw: bytes | None, timestamp: int) -> tuple[bytes, bytes | None] | None:
        """(new key, value bytes after the steps), or None for a record filtered out."""
        if timestamp < 0:
            raise SerdeError(f"invalid timestamp {timestamp}")
        if self.chain:
            kept, value, raw = self.chain.apply(raw)
            if not kept:
                return None
        else:
            value = None if raw is None else self.decode(raw)
        key = self.key_by.key_of(value)
        try:
            return self.key_by.key_serde.serialize(key), raw
        except SerdeError as error:
            raise StepError(
                f"{self.key_by.describe()} returned a key of type {type(key).__name__}, which "
                f"its key serde cannot encode ({error}); pass key_type= to key_by"
            ) from error

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys: list[bytes | None] = []
            values: list[bytes | None] = []
            partitions: list[int | None] = []
            for raw, timestamp in zip(
                batch.column("value").to_pylist(),
                batch.column("timestamp").to_pylist(),
                strict=True,
            ):
                try:
                    found = self._rekeyed(raw, timestamp)
                except (SerdeError, StepError):
                    if not self.skip_failures:
                        raise
                    found = None
                if found is None:
                    keys.append(None)
                    values.append(None)
                    partitions.append(None)
                else:
                    keys.append(found[0])
                    values.append(found[1])
                    partitions.append(partition_for_key(found[0], self.partitions))
            kept = pa.array([p is not None for p in partitions], pa.bool_())
            columns = {
                "key": pa.array(keys, pa.binary()),
                "value": pa.array(values, pa.binary()),
                "topic": pa.array([self.topic] * batch.num_rows, pa.string()),
                "partition": pa.array(partitions, pa.int32()),
                "offset": pa.nulls(batch.num_rows, pa.int64()),
            }
            rekeyed = batch
            for name, column in columns.items():
                index = rekeyed.schema.get_field_index(name)
                rekeyed = rekeyed.set_column(index, name, column)
            yield rekeyed.filter(kept)


def rekey(
    records: DataFrame, repartition: Repartition, partitions: int, *, skip_failures: bool
) -> DataFrame:
    """The records of `repartition.source` (RECORD_SCHEMA and `pos`) as its repartition topic
    holds them, with `partitions` partitions."""
    shipped: list[object] = [repartition.key_by.key]
    for step in repartition.steps:
        if isinstance(step, Filter):
            shipped.append(step.predicate)
        elif isinstance(step, MapValues):
            shipped += [step.fn, step.value_type]
    shipped.append(repartition.source.value_type)
    run = _Rekey(repartition, partitions, skip_failures)
    what = f"key_by {repartition.name!r}"
    return records.mapInArrow(ship(run, what, shipped), records.schema)


class _KeyedPartitions:
    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            index = batch.schema.get_field_index("partition")
            known = batch.column(index).to_pylist()
            found = [
                p if key is None else partition_for_key(key, self.partitions)
                for key, p in zip(batch.column("key").to_pylist(), known, strict=True)
            ]
            yield batch.set_column(index, "partition", pa.array(found, pa.int32()))


def keyed_partitions(records: DataFrame, partitions: int) -> DataFrame:
    """`records` with each keyed one's `partition` the one Kafka's default partitioner picks
    among `partitions` (records without a key keep theirs)."""
    shipped = ship(_KeyedPartitions(partitions), "the output partitioner", [])
    return records.mapInArrow(shipped, records.schema)
