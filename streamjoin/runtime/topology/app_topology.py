"""How an app's sub-topologies become tasks: task ids, the stores each task needs, its processor.

A join's task for partition p reads partition p of both input topics (one partition
number across the co-partitioned topics, docs/rebalancing.md); a `key_by`'s stateless task p
reads partition p of the topic before it. Joins and key_bys reading a common topic are one
sub-topology, whose task p runs them all (`subtopology_groups`). A task id is
"<sub-topology>_<partition>": "<join>_<p>" (which also names the task's state directory), "<key_by
name>-repartition_<p>", or for several "<member>.<member>_<p>".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from streamjoin.assignment.tasks import model as assignment
from streamjoin.assignment.tasks.group_assignor import Subtopology
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec, Repartition
from streamjoin.dsl.topics import Table
from streamjoin.dsl.topology import group_name, subtopology_groups
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.foreign_key import ForeignKeyLeft, ForeignKeyRight
from streamjoin.runtime.joins.global_table import GlobalLookup, GlobalTableJoin
from streamjoin.runtime.joins.pending import PendingNonMatches
from streamjoin.runtime.joins.records import JoinOutput, SourceRecord
from streamjoin.runtime.joins.table import TableJoin
from streamjoin.runtime.joins.table_table import TableTableJoin
from streamjoin.runtime.joins.versioned_table import VersionedTableJoin
from streamjoin.runtime.joins.windowed import WindowedJoin
from streamjoin.runtime.output.sink import RecordSink
from streamjoin.state.specs import StoreSpec, TaskSpec
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore

__all__ = (
    "AppTopology",
    "GlobalTables",
    "JoinProcessor",
    "Member",
    "StoreLookup",
    "TaskId",
    "build_processor",
    "member_inputs",
    "store_specs",
)


@dataclass(frozen=True, slots=True, order=True)
class TaskId:
    subtopology: str
    """A join's name, or a repartition's "<key_by name>-repartition"."""
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        subtopology, _, partition = text.rpartition("_")
        if not subtopology or not partition.isdigit():
            raise ValueError(f"not a task id: {text!r} (expected <sub-topology>_<partition>)")
        return cls(subtopology, int(partition))


class JoinProcessor(Protocol):
    counters: JoinCounters

    def process(self, record: SourceRecord) -> list[JoinOutput]: ...

    def advance_to(self, stream_time: int) -> list[JoinOutput]: ...


class StoreLookup(Protocol):
    def window(self, name: str) -> WindowStore: ...

    def kv(self, name: str) -> KeyValueStore: ...

    def versioned(self, name: str) -> VersionedStore: ...


class GlobalTables(Protocol):
    def table(self, topic: str) -> GlobalLookup: ...


def _names(spec: JoinSpec) -> dict[str, str]:
    return {
        "left": f"{spec.name}-left",
        "right": f"{spec.name}-right",
        "pending": f"{spec.name}-pending",
        "table": f"{spec.name}-table",
        "subscriptions": f"{spec.name}-subscriptions",
    }


def store_specs(spec: JoinSpec) -> tuple[StoreSpec, ...]:
    """The stores a task of `spec` keeps; their names start with the join's name, so the
    changelog topics of different joins never collide."""
    names = _names(spec)
    if spec.is_global:
        return ()  # the global table's store is the worker's, not the task's
    fk = spec.foreign_key
    if fk is not None:
        if fk.side == "left":
            return (StoreSpec.kv(names["left"], source_topic=fk.left_table.name),)
        return (
            StoreSpec.kv(names["right"], source_topic=fk.right_table.name),
            StoreSpec.kv(names["subscriptions"]),
        )
    if spec.is_table_table:  # each side's table, restored from its own topic
        return (
            StoreSpec.kv(names["left"], source_topic=spec.left.name),
            StoreSpec.kv(names["right"], source_topic=spec.right.name),
        )
    if spec.is_stream_table:
        table = spec.right
        assert isinstance(table, Table)
        if table.versioned:
            assert table.history_ms is not None
            return (
                StoreSpec.versioned(
                    names["table"], history_ms=table.history_ms, source_topic=table.name
                ),
            )
        return (StoreSpec.kv(names["table"], source_topic=table.name),)
    assert spec.window is not None
    # As Kafka Streams' join stores: a record is kept while its timestamp is above its side's
    # stream time - (before + after + grace); a late record joins what the other side still keeps.
    retention = spec.window.retention_ms
    stores = [StoreSpec.window(names[side], retention_ms=retention) for side in ("left", "right")]
    if spec.how != "inner":
        stores.append(StoreSpec.kv(names["pending"]))
    return tuple(stores)


def build_processor(
    spec: JoinSpec,
    stores: StoreLookup | None,
    sink: RecordSink,
    global_tables: GlobalTables | None = None,
) -> JoinProcessor:
    """`stores`: the task's own (None for a global-table join, which has none); `sink`: where
    a foreign-key join's halves send their subscriptions and responses."""
    names = _names(spec)
    if spec.is_global:
        assert global_tables is not None
        return GlobalTableJoin(spec, global_tables.table(spec.right.name))
    assert stores is not None
    fk = spec.foreign_key
    if fk is not None:
        if fk.side == "left":
            return ForeignKeyLeft(spec, stores.kv(names["left"]), sink)
        return ForeignKeyRight(
            spec, stores.kv(names["right"]), stores.kv(names["subscriptions"]), sink
        )
    if spec.is_table_table:
        return TableTableJoin(spec, stores.kv(names["left"]), stores.kv(names["right"]))
    if spec.is_stream_table:
        if spec.has_versioned_table:
            return VersionedTableJoin(spec, stores.versioned(names["table"]))
        return TableJoin(spec, stores.kv(names["table"]))
    pending = PendingNonMatches(stores.kv(names["pending"])) if spec.how != "inner" else None
    return WindowedJoin(spec, stores.window(names["left"]), stores.window(names["right"]), pending)


Member = JoinSpec | Repartition
"""What a sub-topology runs: joins and key_bys."""


def member_inputs(member: Member) -> tuple[str, ...]:
    """The topics a member reads, left then right for a join."""
    if isinstance(member, JoinSpec):
        return member.input_topics
    return (member.source.name,)


class AppTopology:
    """An app's sub-topologies, numbered for the task assignor and its user data as
    `subtopology_groups` orders them (an app where no two joins or key_bys read one topic
    numbers and names them as before: joins, then repartitions, in name order; every worker of
    the app numbers them alike). A sub-topology of key_bys only is stateless: the assignor
    places its tasks for balance only."""

    def __init__(self, app: App, partitions: Mapping[str, int]) -> None:
        """`partitions`: each join's and key_by's task count, by sub-topology name."""
        self.app = app
        self.joins = tuple(sorted(app.joins, key=lambda spec: spec.name))
        self.repartitions = tuple(sorted(app.repartitions, key=lambda r: r.subtopology))
        units: dict[str, Member] = {spec.name: spec for spec in self.joins}
        units.update({r.subtopology: r for r in self.repartitions})
        groups = subtopology_groups(app)
        self.names = tuple(group_name(members) for members in groups)
        self._members = {
            group_name(members): tuple(units[m] for m in members) for members in groups
        }
        self._index = {name: i for i, name in enumerate(self.names)}
        self._group_of = {m: group_name(members) for members in groups for m in members}
        self.partitions = dict(partitions)
        """By sub-topology, and by join / key_by (the stores of a join are found by its name)."""
        for members in groups:
            self.partitions[group_name(members)] = partitions[members[0]]

    def subtopologies(self) -> list[Subtopology]:
        return [Subtopology(self.inputs(name), self.is_stateful(name)) for name in self.names]

    def subtopology_of(self, member: str) -> str:
        """The sub-topology whose tasks run the join or key_by `member` (its own, or the merged
        one of the joins that share a source topic with it)."""
        return self._group_of[member]

    def members(self, subtopology: str) -> tuple[Member, ...]:
        """The joins and key_bys its tasks run, in name order (joins first)."""
        return self._members[subtopology]

    def is_stateful(self, subtopology: str) -> bool:
        """Whether its tasks keep state of their own (a global-table join reads the worker's)."""
        return any(isinstance(m, JoinSpec) and not m.is_global for m in self._members[subtopology])

    def inputs(self, subtopology: str) -> tuple[str, ...]:
        """The topics the sub-topology's tasks read, each once: for one join, left then right."""
        return tuple(dict.fromkeys(t for m in self._members[subtopology] for t in member_inputs(m)))

    def input_topics(self) -> list[str]:
        """Every topic some task reads, sorted."""
        return sorted({t for name in self.names for t in self.inputs(name)})

    def to_assignment(self, task: TaskId) -> assignment.TaskId:
        return assignment.TaskId(self._index[task.subtopology], task.partition)

    def from_assignment(self, task: assignment.TaskId) -> TaskId:
        return TaskId(self.names[task.subtopology], task.partition)

    def knows(self, task: assignment.TaskId) -> bool:
        return 0 <= task.subtopology < len(self.names)

    def task_spec(self, task: TaskId) -> TaskSpec:
        """The state of a task: the stores of every join it runs (named after their join, so
        they keep their changelogs whichever sub-topology the join is in)."""
        stores = tuple(
            store
            for member in self._members[task.subtopology]
            if isinstance(member, JoinSpec)
            for store in store_specs(member)
        )
        return TaskSpec(str(task), task.partition, self.partitions[task.subtopology], stores)

    def all_tasks(self) -> list[TaskId]:
        return [TaskId(name, p) for name in self.names for p in range(self.partitions[name])]
