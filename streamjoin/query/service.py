"""Answering one key lookup from any worker: find the key's task, answer from the local copy when
it may, else ask the member the assignment names, else (stale reads allowed) a standby's copy.

Every member learns with each assignment where every task's active and standby copies are (the
query hosts of AssignmentInfo v3), so no lookup needs a round trip to find its owner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.task_metadata import AssignmentInfo
from streamjoin.query.stores import (
    BadKey,
    QueryableStore,
    TimeRange,
    key_bytes,
    queryable_stores,
    task_of,
)
from streamjoin.runtime.topology import AppTopology, TaskId
from streamjoin.state.manager import StateManager
from streamjoin.state.task_state import TaskPhase, TaskState

__all__ = ("Lookup", "Placement", "QueryError", "QueryService", "QueryStats")

RETRY_AFTER_S = 1
_ROLES = {
    TaskPhase.RUNNING: "active",
    TaskPhase.RESTORING: "restoring",
    TaskPhase.STANDBY: "standby",
}


class QueryError(Exception):
    """A lookup that cannot be answered: its HTTP status and one line saying why."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s


class Unreachable(Exception):
    """A member did not answer (refused, reset, timed out)."""


@dataclass(frozen=True, slots=True)
class Placement:
    active: str | None = None
    standby: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Lookup:
    store: str
    key: str
    window: TimeRange
    allow_stale: bool
    forwarded: bool
    """Asked by another member: answer from here or say why not, never forward again."""
    deadline: float
    """time.monotonic() by which the answer must be given."""


@dataclass(slots=True)
class QueryStats:
    served: int = 0
    forwarded: int = 0
    failed: int = 0
    latencies_s: list[float] = field(default_factory=list)


Forward = Callable[[str, Lookup], Awaitable[tuple[int, dict[str, Any]]]]
"""Ask the member at a URL; its status and JSON answer, or Unreachable."""


class QueryService:
    def __init__(
        self,
        topology: AppTopology,
        state: StateManager,
        assignment: Callable[[], AssignmentInfo | None],
        forward: Forward,
    ) -> None:
        self.topology = topology
        self.stores = queryable_stores(topology.joins)
        self.url = ""
        """This member's advertised query URL (set once the server is bound)."""
        self._state = state
        self._assignment = assignment
        self._forward = forward

    def placements(self) -> dict[TaskId, Placement]:
        """Where each task's active and standby copies are, as the last assignment said."""
        told = self._assignment()
        if told is None:
            return {}
        active: dict[TaskId, str] = {}
        standby: dict[TaskId, list[str]] = {}
        for host in told.query_hosts:
            for task in host.active:
                if self.topology.knows(task):
                    active[self.topology.from_assignment(task)] = host.url
            for task in host.standby:
                if self.topology.knows(task):
                    standby.setdefault(self.topology.from_assignment(task), []).append(host.url)
        return {
            task: Placement(active.get(task), tuple(sorted(standby.get(task, ()))))
            for task in {*active, *standby}
        }

    def listing(self) -> dict[str, Any]:
        """GET /stores: every store, its kind, partitions and where each of its tasks is."""
        placements = self.placements()
        stores = []
        for name, store in sorted(self.stores.items()):
            partitions = self.topology.partitions[store.subtopology]
            tasks = []
            for partition in range(partitions):
                where = placements.get(TaskId(store.subtopology, partition), Placement())
                tasks.append(
                    {"partition": partition, "active": where.active, "standby": list(where.standby)}
                )
            stores.append(
                {"name": name, "kind": store.kind, "partitions": partitions, "tasks": tasks}
            )
        return {"served_by": self.url, "stores": stores}

    def _store(self, name: str) -> QueryableStore:
        store = self.stores.get(name)
        if store is None:
            known = ", ".join(sorted(self.stores)) or "none"
            raise QueryError(404, f"no store named {name!r}; the stores are: {known}")
        return store

    async def lookup(self, lookup: Lookup) -> dict[str, Any]:
        store = self._store(lookup.store)
        try:
            key = key_bytes(store, lookup.key)
        except BadKey as exc:
            raise QueryError(400, str(exc)) from None
        task = task_of(store, key, self.topology.partitions[store.subtopology])
        local = self._state.task(str(task))
        if local is not None and local.phase is TaskPhase.RUNNING:
            return self._answer(store, lookup, key, task, local)
        moving = QueryError(
            503,
            f"task {task} of store {store.name!r} has no running active copy (it is moving): "
            "retry, or allow stale reads",
            RETRY_AFTER_S,
        )
        if lookup.forwarded:
            if lookup.allow_stale and _readable(local):
                assert local is not None
                return self._answer(store, lookup, key, task, local)
            raise moving
        where = self.placements().get(task, Placement())
        failure = moving
        if where.active is not None and where.active != self.url:
            try:
                return await self._asked(where.active, lookup)
            except Unreachable as exc:
                failure = QueryError(
                    502, f"the owner of task {task}, {where.active}, is unreachable: {exc}"
                )
            except QueryError as exc:
                if exc.status != 503 or not lookup.allow_stale:
                    raise
                failure = exc
        if lookup.allow_stale:
            if _readable(local):
                assert local is not None
                return self._answer(store, lookup, key, task, local)
            for url in where.standby:
                if url == self.url:
                    continue
                try:
                    return await self._asked(url, lookup)
                except (Unreachable, QueryError):
                    continue
        raise failure

    async def _asked(self, url: str, lookup: Lookup) -> dict[str, Any]:
        status, answer = await self._forward(url, lookup)
        if status != 200:
            raise QueryError(status, str(answer.get("error", f"{url} answered {status}")))
        return answer

    def _answer(
        self, store: QueryableStore, lookup: Lookup, key: bytes, task: TaskId, local: TaskState
    ) -> dict[str, Any]:
        value = store.read(local, key, lookup.window)
        if value is None:
            raise QueryError(404, f"key {lookup.key!r} not found in store {store.name!r}")
        role = _ROLES[local.phase]
        lag = local.read_lag()
        return {
            "store": store.name,
            "key": lookup.key,
            "value": value,
            "partition": task.partition,
            "served_by": self.url,
            "role": role,
            "lag_records": None if lag is None else lag[0],
            "lag_ms": None if lag is None else lag[1],
        }


def _readable(task: TaskState | None) -> bool:
    return task is not None and task.phase in _ROLES
