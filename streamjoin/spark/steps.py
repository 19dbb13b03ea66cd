"""A join input's filter/map_values steps on Spark: the same StepChain the streaming join task
runs (runtime/tasks/join_task.py), per row in Python workers through `mapInArrow`, before the
window join.

A record a step fails on is dropped when `skip_failures` (the worker dead-letters it), else it
fails the job. The records keep their topic, partition and offset, so the join's provenance
headers name the same source records as the worker's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from streamjoin.dsl.serdes import Serde, SerdeError
from streamjoin.dsl.steps import Filter, MapValues, Step, StepChain, StepError
from streamjoin.spark.shipping import ship

__all__ = ("apply_steps",)


class _RunSteps:
    def __init__(self, chain: StepChain, skip_failures: bool) -> None:
        self.chain = chain
        self.skip_failures = skip_failures

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            kept: list[bool] = []
            values: list[bytes | None] = []
            for raw in batch.column("value").to_pylist():
                if raw is None:  # the join skips it, as the worker's does
                    kept.append(False)
                    values.append(None)
                    continue
                try:
                    keep, _, value = self.chain.apply(raw)
                except (SerdeError, StepError):
                    if not self.skip_failures:
                        raise
                    keep, value = False, None
                kept.append(keep)
                values.append(value)
            index = batch.schema.get_field_index("value")
            changed = batch.set_column(index, "value", pa.array(values, pa.binary()))
            yield changed.filter(pa.array(kept, pa.bool_()))


def apply_steps(
    frame: DataFrame,
    steps: tuple[Step, ...],
    read: Serde,
    seen: Serde,
    *,
    skip_failures: bool,
) -> DataFrame:
    """`frame` (RECORD_SCHEMA) after `steps`: values `read` decodes, `seen` encodes after."""
    if not steps:
        return frame
    shipped: list[object] = []
    for step in steps:
        if isinstance(step, Filter):
            shipped.append(step.predicate)
        elif isinstance(step, MapValues):
            shipped += [step.fn, step.value_type]
    run = _RunSteps(StepChain(steps, read, seen), skip_failures)
    described = ", ".join(step.describe() for step in steps)
    return frame.mapInArrow(ship(run, f"the steps {described}", shipped), frame.schema)
