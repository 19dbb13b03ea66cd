"""JoinSpec: a join as plain data, read by both engines (the asyncio worker and Spark)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin.dsl.serdes import Serde
from streamjoin.dsl.steps import KeyBy, MapValues, Step
from streamjoin.dsl.topics import GlobalTable, Table, Topic
from streamjoin.dsl.windows import JoinWindows

__all__ = (
    "JOIN_KINDS",
    "ForeignKey",
    "JoinKind",
    "JoinSpec",
    "Joiner",
    "Repartition",
    "repartition_topic",
)

JoinKind = Literal["inner", "left", "outer"]
JOIN_KINDS: tuple[JoinKind, ...] = ("inner", "left", "outer")

Joiner = Callable[[Any, Any], Any]
"""Builds the output value from the left and right values (None for a missing side)."""


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """A foreign-key join (KIP-213) runs as two sub-topologies, each a JoinSpec carrying this:
    the left one ("<join>") reads the left table and the response topic and writes the output
    and the subscription topic; the right one ("<join>-fk") reads the subscription topic and
    the right table and writes the response topic."""

    extract: Callable[[Any], Any]
    """The left value's foreign key: the right table's key (None: no foreign key)."""
    left_table: Table
    right_table: Table
    subscription: Topic
    """Keyed by foreign key, partitioned as the right table."""
    response: Topic
    """Keyed by left key, partitioned as the left table."""
    side: Literal["left", "right"]


@dataclass(frozen=True, slots=True)
class JoinSpec:
    """One join of an app. Stream-stream when `right` is a Topic (then `window` is set),
    stream-table when it is a Table, table-table when both are, stream-global-table when the
    right is a GlobalTable (then `lookup` takes the table key from each left value; the tasks
    read the left topic only). Each join is its own sub-topology: its tasks are its partition
    numbers.

    `left` and `right` are the topics the join's tasks read (a repartition topic where the
    input was re-keyed); `left_steps`/`right_steps` the filter/map_values steps those tasks
    run on each side's records before joining them."""

    name: str
    left: Topic
    right: Topic
    how: JoinKind
    into: Topic
    joiner: Joiner
    window: JoinWindows | None = None
    left_steps: tuple[Step, ...] = ()
    right_steps: tuple[Step, ...] = ()
    lookup: KeyBy | None = None
    """A global-table join's `key=`: the table key of each left value."""
    foreign_key: ForeignKey | None = None

    @property
    def left_value_serde(self) -> Serde:
        """How the left values the join stores and hands to the joiner are serialised."""
        return _serde_after(self.left_steps, self.left.value_serde)

    @property
    def right_value_serde(self) -> Serde:
        return _serde_after(self.right_steps, self.right.value_serde)

    @property
    def has_steps(self) -> bool:
        return bool(self.left_steps or self.right_steps)

    @property
    def is_stream_table(self) -> bool:
        """The right side is a table (the left a stream, unless `is_table_table`)."""
        return (
            isinstance(self.right, Table)
            and not isinstance(self.left, Table)
            and not self.is_global
        )

    @property
    def is_table_table(self) -> bool:
        return isinstance(self.left, Table) and isinstance(self.right, Table)

    @property
    def has_versioned_table(self) -> bool:
        return any(isinstance(t, Table) and t.versioned for t in (self.left, self.right))

    @property
    def emits_table(self) -> bool:
        """Its output is a table: a result that stops existing becomes a tombstone."""
        return self.is_table_table or self.foreign_key is not None

    @property
    def kind(self) -> str:
        """What `describe` and messages call it."""
        if self.is_global:
            return "stream-global-table join"
        if self.foreign_key is not None:
            return f"foreign-key join ({self.foreign_key.side} side)"
        if self.is_table_table:
            return "table-table join"
        if self.is_stream_table:
            return "stream-table join" + (
                " as of each record's time" if self.has_versioned_table else ""
            )
        return "windowed stream-stream join"

    @property
    def is_global(self) -> bool:
        return isinstance(self.right, GlobalTable)

    @property
    def input_topics(self) -> tuple[str, ...]:
        """The topics the join's tasks read: left then right (left only for a global table,
        which every worker reads whole, outside the tasks)."""
        if self.is_global:
            return (self.left.name,)
        return (self.left.name, self.right.name)


def _serde_after(steps: tuple[Step, ...], serde: Serde) -> Serde:
    for step in steps:
        if isinstance(step, MapValues):
            serde = step.value_serde
    return serde


def repartition_topic(app_id: str, name: str) -> str:
    return f"{app_id}-{name}-repartition"


@dataclass(frozen=True, slots=True)
class Repartition:
    """A `key_by`: its own sub-topology of stateless tasks, one per partition of `source`, that
    run `steps` (filter/map_values) then write each record to `topic` under its new key."""

    name: str
    source: Topic
    steps: tuple[Step, ...]
    key_by: KeyBy
    topic: Topic
    """The internal repartition topic; its partition count is resolved with the topology."""
    join: str
    """The join it was first declared for (named in messages and dead letters)."""
    side: str

    @property
    def subtopology(self) -> str:
        """Its sub-topology's name, which its task ids start with: "<name>-repartition"."""
        return f"{self.name}-repartition"
