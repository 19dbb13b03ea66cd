"""How an app's joins become tasks: task ids, the stores each task needs, its processor.

Each join is a sub-topology; its task for partition p reads partition p of both input topics
(seed 000: one partition number across the co-partitioned topics). A task id is
"<join>_<partition>", which also names the task's state directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from streamjoin.assignment.tasks import model as assignment
from streamjoin.assignment.tasks.group_assignor import Subtopology
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.pending import PendingNonMatches
from streamjoin.runtime.joins.records import JoinOutput, SourceRecord
from streamjoin.runtime.joins.table import TableJoin
from streamjoin.runtime.joins.windowed import WindowedJoin
from streamjoin.state.kv_store import KeyValueStore
from streamjoin.state.specs import StoreSpec, TaskSpec
from streamjoin.state.window_store import WindowStore

__all__ = (
    "AppTopology",
    "JoinProcessor",
    "StoreLookup",
    "TaskId",
    "build_processor",
    "store_specs",
)


@dataclass(frozen=True, slots=True, order=True)
class TaskId:
    join: str
    partition: int

    def __str__(self) -> str:
        return f"{self.join}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        join, _, partition = text.rpartition("_")
        if not join or not partition.isdigit():
            raise ValueError(f"not a task id: {text!r} (expected <join>_<partition>)")
        return cls(join, int(partition))


class JoinProcessor(Protocol):
    counters: JoinCounters

    def process(self, record: SourceRecord) -> list[JoinOutput]: ...

    def advance_to(self, stream_time: int) -> list[JoinOutput]: ...


class StoreLookup(Protocol):
    def window(self, name: str) -> WindowStore: ...

    def kv(self, name: str) -> KeyValueStore: ...


def _names(spec: JoinSpec) -> dict[str, str]:
    return {
        "left": f"{spec.name}-left",
        "right": f"{spec.name}-right",
        "pending": f"{spec.name}-pending",
        "table": f"{spec.name}-table",
    }


def store_specs(spec: JoinSpec) -> tuple[StoreSpec, ...]:
    """The stores a task of `spec` keeps; their names start with the join's name, so the
    changelog topics of different joins never collide."""
    names = _names(spec)
    if spec.is_stream_table:
        return (StoreSpec.kv(names["table"]),)
    assert spec.window is not None
    # One millisecond more than the window needs: a store drops records at exactly
    # stream time - retention, and a partner may still arrive at that instant.
    retention = spec.window.retention_ms + 1
    stores = [StoreSpec.window(names[side], retention_ms=retention) for side in ("left", "right")]
    if spec.how != "inner":
        stores.append(StoreSpec.kv(names["pending"]))
    return tuple(stores)


def build_processor(spec: JoinSpec, stores: StoreLookup) -> JoinProcessor:
    names = _names(spec)
    if spec.is_stream_table:
        return TableJoin(spec, stores.kv(names["table"]))
    pending = PendingNonMatches(stores.kv(names["pending"])) if spec.how != "inner" else None
    return WindowedJoin(spec, stores.window(names["left"]), stores.window(names["right"]), pending)


class AppTopology:
    """An app's joins as numbered sub-topologies, for the task assignor and its user data.

    Joins are numbered in name order, so every worker of the app numbers them alike.
    """

    def __init__(self, app: App, partitions: Mapping[str, int]) -> None:
        """`partitions`: each join's partition count."""
        self.app = app
        self.joins = tuple(sorted(app.joins, key=lambda spec: spec.name))
        self._index = {spec.name: i for i, spec in enumerate(self.joins)}
        self.partitions = dict(partitions)

    def subtopologies(self) -> list[Subtopology]:
        return [Subtopology(spec.input_topics) for spec in self.joins]

    def to_assignment(self, task: TaskId) -> assignment.TaskId:
        return assignment.TaskId(self._index[task.join], task.partition)

    def from_assignment(self, task: assignment.TaskId) -> TaskId:
        return TaskId(self.joins[task.subtopology].name, task.partition)

    def knows(self, task: assignment.TaskId) -> bool:
        return 0 <= task.subtopology < len(self.joins)

    def task_spec(self, task: TaskId) -> TaskSpec:
        spec = self.app.get_join(task.join)
        stores = store_specs(spec)
        return TaskSpec(str(task), task.partition, self.partitions[spec.name], stores)

    def all_tasks(self) -> list[TaskId]:
        return [TaskId(s.name, p) for s in self.joins for p in range(self.partitions[s.name])]
