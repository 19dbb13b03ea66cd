"""Answering one key lookup from any worker: find the key's task, answer from the local copy when
it may, else ask the member the assignment names, else (stale reads allowed) a standby's copy.

Every member learns with each assignment where every task's active and standby copies are (the
query hosts of AssignmentInfo v3), so no lookup needs a round trip to find its owner. A global
table is whole on every worker: the member asked answers it from its own copy, never forwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamjoin.assignment.task_metadata import AssignmentInfo
from streamjoin.query.stores import (
    BadKey,
    KeyQuery,
    NotKept,
    QueryableStore,
    key_bytes,
    queryable_stores,
    task_of,
)
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.topology.app_topology import AppTopology, StoreLookup, TaskId
from streamjoin.state.manager import StateManager
from streamjoin.state.phases import TaskPhase
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.state.task_state import TaskState

__all__ = ("Placement", "QueryError", "QueryService", "QueryStats", "Request")

RETRY_AFTER_S = 1
MAX_LIMIT = 10_000
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
class Request:
    """One HTTP request to answer: where it came in, for asking another member the same."""

    store: str
    path: str
    params: Mapping[str, str]
    """Its query parameters other than `stale`."""
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


Forward = Callable[[str, Request], Awaitable[tuple[int, dict[str, Any]]]]
"""Ask the member at a URL; its status and JSON answer, or Unreachable."""


class _GlobalCopies:
    """The worker's global tables as a copy to read, each by its topic's name."""

    def __init__(self, tables: GlobalTables) -> None:
        self._tables = tables

    def kv(self, name: str) -> KeyValueStore:
        return self._tables.table(name)

    def window(self, name: str) -> WindowStore:
        raise LookupError(f"global tables have no window store {name!r}")

    def versioned(self, name: str) -> VersionedStore:
        raise LookupError(f"global tables have no versioned store {name!r}")


class QueryService:
    def __init__(
        self,
        topology: AppTopology,
        state: StateManager,
        assignment: Callable[[], AssignmentInfo | None],
        forward: Forward,
        global_tables: GlobalTables | None = None,
    ) -> None:
        self.topology = topology
        self.stores = {
            name: store
            for name, store in queryable_stores(topology.joins, topology.subtopology_of).items()
            if global_tables is not None or not store.is_global
        }
        self.url = ""
        """This member's advertised query URL (set once the server is bound)."""
        self._state = state
        self._assignment = assignment
        self._forward = forward
        self._globals = global_tables

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
            if store.is_global:  # no tasks: every worker answers from its own copy
                assert self._globals is not None
                partitions = self._globals.partitions[name]
                stores.append({"name": name, "kind": store.kind, "partitions": partitions})
                continue
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

    def partitions(self, name: str) -> int:
        return self.topology.partitions[self.store(name).subtopology]

    def store(self, name: str) -> QueryableStore:
        store = self.stores.get(name)
        if store is None:
            known = ", ".join(sorted(self.stores)) or "none"
            raise QueryError(404, f"no store named {name!r}; the stores are: {known}")
        return store

    async def lookup(self, request: Request, key_text: str, query: KeyQuery) -> dict[str, Any]:
        """One key: `{"store", "key", "value", "partition", "served_by", "role", "lag_records",
        "lag_ms"}` (versioned tables add "timestamp" and "valid_to")."""
        store = self.store(request.store)
        if query.as_of is not None and store.kind != "versioned":
            raise QueryError(
                400, f"as_of applies to versioned tables; store {store.name!r} is a {store.kind}"
            )
        try:
            key = key_bytes(store, key_text)
        except BadKey as exc:
            raise QueryError(400, str(exc)) from None

        def found(copy: StoreLookup) -> dict[str, Any]:
            try:
                fields = store.read(copy, key, query)
            except NotKept as exc:
                raise QueryError(404, str(exc)) from None
            if fields is None:
                raise QueryError(404, f"key {key_text!r} not found in store {store.name!r}")
            return {"store": store.name, "key": key_text, **fields}

        if store.is_global:
            answer = found(self._global_copy())
            return {**answer, **self._global_lag(store, answer["partition"])}
        task = task_of(store, key, self.topology.partitions[store.subtopology])
        return await self._routed(
            task, request, lambda local: {**found(local), **self._copy(local)}
        )

    async def partition_range(
        self, request: Request, partition: int, start: str | None, end: str | None, limit: int
    ) -> dict[str, Any]:
        """Keys start <= key < end of one partition of an ordered store, in key order."""
        store = self.store(request.store)
        if store.is_global:
            raise QueryError(
                400,
                f"store {store.name!r} is a global table, whole on every worker: ask "
                f"/stores/{store.name}/keys",
            )
        partitions = self.partitions(store.name)
        if not 0 <= partition < partitions:
            raise QueryError(404, f"store {store.name!r} has partitions 0 to {partitions - 1}")
        low, high = self._bounds(store, start, end, limit)

        def read(local: TaskState) -> dict[str, Any]:
            entries = store.scan(local, low, high, limit)
            return {"store": store.name, "entries": entries, **self._copy(local)}

        return await self._routed(TaskId(store.subtopology, partition), request, read)

    def global_range(
        self, name: str, start: str | None, end: str | None, limit: int
    ) -> dict[str, Any]:
        """Keys start <= key < end of a global table, from this worker's copy, in key order."""
        store = self.store(name)
        low, high = self._bounds(store, start, end, limit)
        entries = store.scan(self._global_copy(), low, high, limit + 1)
        for entry in entries:
            entry.update(self._global_lag(store, entry["partition"]))
        return {
            "store": store.name,
            "entries": entries[:limit],
            "truncated": len(entries) > limit,
            "served_by": self.url,
        }

    def _bounds(
        self, store: QueryableStore, start: str | None, end: str | None, limit: int
    ) -> tuple[bytes | None, bytes | None]:
        """A key range's ends as the store holds keys; refuses a range it cannot answer."""
        if not 0 < limit <= MAX_LIMIT:
            raise QueryError(400, f"limit={limit}: give 1 to {MAX_LIMIT} keys")
        if not store.ordered:
            raise QueryError(
                400, f"store {store.name!r} ({store.kind}) is not ordered by key: ask one key"
            )
        try:
            low, high = (None if k is None else key_bytes(store, k) for k in (start, end))
        except BadKey as exc:
            raise QueryError(400, str(exc)) from None
        return low, high

    def _global_copy(self) -> _GlobalCopies:
        assert self._globals is not None
        return _GlobalCopies(self._globals)

    def _global_lag(self, store: QueryableStore, partition: int) -> dict[str, Any]:
        """A global table's copy: how far the partition the value came from may be behind."""
        assert self._globals is not None
        lag = self._globals.read_lag(store.name, partition)
        return {
            "partition": partition,
            "served_by": self.url,
            "role": "global",
            "lag_records": None if lag is None else lag[0],
            "lag_ms": None if lag is None else lag[1],
        }

    async def _routed(
        self, task: TaskId, request: Request, read: Callable[[TaskState], dict[str, Any]]
    ) -> dict[str, Any]:
        """Read `task`'s running active copy here, or ask the member running it; with stale
        reads allowed and no active answering, a standby's or restoring copy, here or not."""
        local = self._state.task(str(task))
        if local is not None and local.phase is TaskPhase.RUNNING:
            return read(local)
        moving = QueryError(
            503,
            f"task {task} of store {request.store!r} has no running active copy (it is moving): "
            "retry, or allow stale reads",
            RETRY_AFTER_S,
        )
        if request.forwarded:
            if request.allow_stale and local is not None and local.phase in _ROLES:
                return read(local)
            raise moving
        where = self.placements().get(task, Placement())
        failure = moving
        if where.active is not None and where.active != self.url:
            try:
                return await self._asked(where.active, request)
            except Unreachable as exc:
                failure = QueryError(
                    502, f"the owner of task {task}, {where.active}, is unreachable: {exc}"
                )
            except QueryError as exc:
                if exc.status != 503 or not request.allow_stale:
                    raise
                failure = exc
        if request.allow_stale:
            if local is not None and local.phase in _ROLES:
                return read(local)
            for url in where.standby:
                if url == self.url:
                    continue
                try:
                    return await self._asked(url, request)
                except (Unreachable, QueryError):
                    continue
        raise failure

    async def _asked(self, url: str, request: Request) -> dict[str, Any]:
        status, answer = await self._forward(url, request)
        if status != 200:
            raise QueryError(status, str(answer.get("error", f"{url} answered {status}")))
        return answer

    def _copy(self, local: TaskState) -> dict[str, Any]:
        """Which copy answered, and how far behind its changelog it may be."""
        lag = local.read_lag()
        return {
            "partition": local.spec.partition,
            "served_by": self.url,
            "role": _ROLES[local.phase],
            "lag_records": None if lag is None else lag[0],
            "lag_ms": None if lag is None else lag[1],
        }
