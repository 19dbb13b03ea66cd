"""What every join over history gives: one row per result, before the joiner runs."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf

__all__ = ("JOINED_COLUMNS", "joined", "source_of")

JOINED_COLUMNS = (
    "key",
    "timestamp",
    "task_partition",
    "left_source",
    "right_source",
    "left_value",
    "right_value",
    "pos",
    "tombstone",
)
"""A result's key, timestamp, the task (partition) that produces it, both sides' provenance
("topic:partition:offset", or "topic:partition" for a record of an internal topic, whose offset
Spark cannot know) and value bytes (null for a side it lacks), its place in the processing
order (order.py), and whether it is a table join's tombstone (no value, no joiner call)."""


def source_of(prefix: str = "") -> Column:
    """ "topic:partition:offset" of a record's columns (named with `prefix`); without the
    offset where it has none (a re-keyed record, a result of another join of the app); null
    for the side a non-match lacks."""
    partition = sf.col(f"{prefix}partition")
    return sf.when(
        partition.isNotNull(),
        sf.concat_ws(
            ":",
            sf.col(f"{prefix}topic"),
            partition.cast("string"),
            sf.col(f"{prefix}offset").cast("string"),
        ),
    )


def joined(  # noqa: PLR0917 - one parameter per column
    key: Column,
    timestamp: Column,
    task_partition: Column,
    left_source: Column,
    right_source: Column,
    left_value: Column,
    right_value: Column,
    pos: Column,
    tombstone: Column | bool = False,
) -> list[Column]:
    """The JOINED_COLUMNS, in order, from their expressions."""
    marked = tombstone if isinstance(tombstone, Column) else sf.lit(tombstone)
    columns = (
        key,
        timestamp,
        task_partition,
        left_source,
        right_source,
        left_value,
        right_value,
        pos,
        marked,
    )
    return [c.alias(name) for c, name in zip(columns, JOINED_COLUMNS, strict=True)]
