"""The worker's active tasks: created when the group assigns their partitions, fed with fetched
records, and handed back (committed, state suspended) when their partitions are revoked.

A task runs every join and key_by of its sub-topology (those reading a common topic); how
records reach them is `running_task`'s. A task whose state is still restoring does not hold up
the others: its input partitions are paused until its stores are ready, while every other task
keeps processing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiokafka.errors import KafkaError

from streamjoin.assignment.model import TopicPartition
from streamjoin.errors import StreamJoinError
from streamjoin.group.listener import RebalanceListener
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.output.sink import RecordSink
from streamjoin.runtime.tasks.input_size import MAX_BUFFERED_PER_INPUT, RecordSize, inputs_to_pause
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.tasks.running import MemberTask, RunningTask, member_task, running_task
from streamjoin.runtime.tasks.scheduler import Scheduler
from streamjoin.runtime.tasks.standbys import Standbys
from streamjoin.runtime.tasks.totals import TaskTotals
from streamjoin.runtime.topology.app_topology import AppTopology, GlobalTables, StoreLookup, TaskId
from streamjoin.state.manager import StateManager
from streamjoin.state.specs import TaskSpec
from streamjoin.state.task_state import TaskState

__all__ = ("FetchControl", "TaskManager", "TasksLost")

logger = logging.getLogger(__name__)

OPEN_RETRY_S = 1.0
"""How often a task whose open found the broker unreachable tries again."""


class TasksLost(StreamJoinError):
    """Exactly-once: tasks were lost while their output sat in the open transaction."""


class FetchControl(Protocol):
    def pause(self, partitions: Iterable[TopicPartition]) -> None: ...

    def resume(self, partitions: Iterable[TopicPartition]) -> None: ...


@dataclass(slots=True)
class _Active:
    """A task this worker owns: restoring (not running yet) or running its members."""

    inputs: tuple[TopicPartition, ...]
    """Every partition its members read, each once."""
    running: RunningTask | None = None
    opening: asyncio.Task[None] | None = None


class TaskManager(RebalanceListener):
    def __init__(
        self,
        topology: AppTopology,
        *,
        roles: WorkerRoles,
        state: StateManager,
        sink: RecordSink,
        commit: Callable[[frozenset[TaskId]], Awaitable[None]],
        transaction: asyncio.Lock | None = None,
        kafka: KafkaConnection | None = None,
    ) -> None:
        """`commit(task_ids)` commits those tasks. Set `fetch` to the consumer whose partitions
        are paused while their task restores.

        `transaction` (exactly-once): the lock the worker holds while tasks process and while
        it commits. Revocation holds it from the commit until the tasks are gone, so nothing
        they process in between lands in the next transaction; losing a task fails the worker,
        since the open transaction holds its output. `kafka`: see Scheduler."""
        app = topology.app
        self.app = app
        self.topology = topology
        self.roles = roles
        self._readers: dict[str, str] = {
            topic: name for name in topology.names for topic in topology.inputs(name)
        }
        """Topic -> the sub-topology reading it (one: those sharing a topic are merged)."""
        self._state = state
        self._sink = sink
        self.fetch: FetchControl | None = None
        self.withheld: Callable[[frozenset[TaskId]], None] = lambda tasks: None
        """Told after each assignment of the tasks assigned here whose partitions the
        cooperative step still withholds (tasks/followup.py asks for the follow-up at once)."""
        self.global_tables: GlobalTables | None = None
        """The worker's global tables, which global-table joins read (set before tasks run)."""
        self._commit = commit
        self._transaction = transaction
        self._owned: set[TopicPartition] = set()
        self.active: dict[TaskId, _Active] = {}
        self._running: dict[TaskId, RunningTask | None] = {}
        """Each active task's running form (None until it runs), for the scheduler's rounds."""
        self._full: set[TopicPartition] = set()
        """Inputs paused for their buffered records: too many in their task, or too many bytes
        in all tasks together (`apply_backpressure`)."""
        self.record_size = RecordSize()
        self._waiting: defaultdict[TaskId, list[tuple[TopicPartition, list[Any]]]] = defaultdict(
            list
        )
        """Records fetched for a task that is not running yet."""
        self.rebalances = 0
        self._standbys = Standbys(topology, roles, state, active=self.active.keys)
        self.failure: BaseException | None = None
        """Why a task could not be opened, or revoked tasks not committed; the worker stops
        with it."""
        self.records_in: Counter[str] = Counter()
        self.totals = TaskTotals(app)
        self.scheduler = Scheduler(topology, sink, kafka)
        self.writes = self.scheduler.writes

    # -- group callbacks ------------------------------------------------------------------------

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Called at the end of every rebalance: open the tasks whose input partitions are all
        here now, then bring standbys and learners in line with the assignment."""
        self.rebalances += 1
        self._owned |= partitions
        self.writes.reading(partitions)
        opening = [t for t in sorted(self._complete_tasks(partitions)) if t not in self.active]
        # Register every new task (and pause its inputs) before the first await, so no record
        # fetched meanwhile finds its task missing.
        for task_id in opening:
            self.active[task_id] = _Active(self._inputs(task_id))
            self._running[task_id] = None
        self._apply_pauses()
        self.withheld(self.roles.roles().active - self.active.keys())
        for task_id in opening:
            self._open(task_id)
        await self._standbys.sync()

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._owned -= partitions
        self._forget_waiting(partitions)
        leaving = self._tasks_reading(partitions)
        async with self._transaction or contextlib.nullcontext():
            clean = True
            try:
                if leaving:
                    await self._commit(frozenset(leaving))
            except Exception as exc:  # noqa: BLE001 - whatever failed, the worker fails with it
                # Not all they caused is safe (an output not delivered, a changelog not
                # confirmed, exactly-once: the transaction): they go uncommitted, now and for
                # good, and the worker fails; their next owner reprocesses their input from the
                # last commit.
                self.failure, clean = self.failure or exc, False
            for task_id in leaving:
                await self._drop(task_id, clean=clean)
        self._apply_pauses()

    def on_joined(self) -> None:
        """Their previous owners have revoked the tasks assigned here that wait: read ahead."""
        self._state.read_ends_ahead(str(t) for t in self.roles.roles().active - self.active.keys())

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        if self._transaction is not None and self._tasks_reading(partitions):
            self.failure = self.failure or TasksLost(
                f"{len(self._tasks_reading(partitions))} tasks were lost (this worker was "
                "fenced out of its group): the open transaction holds their output"
            )
        self._owned -= partitions
        self._forget_waiting(partitions)
        for task_id in self._tasks_reading(partitions):
            await self._drop(task_id, clean=False)
        self._apply_pauses()

    # -- processing -----------------------------------------------------------------------------

    def route(self, fetched: Mapping[TopicPartition, list[Any]]) -> int:
        """Hand fetched records to the tasks that read them; returns the record count."""
        count = 0
        for tp, records in fetched.items():
            if tp not in self._owned:  # fetched before a revocation: its next owner reads it
                continue
            count += len(records)
            self.writes.fetched(tp, records)
            self.records_in[tp.topic] += len(records)
            self.record_size.observe(records)
            name = self._readers.get(tp.topic)
            if name is None:
                continue
            task_id = TaskId(name, tp.partition)
            active = self.active.get(task_id)
            if active is not None and active.running is not None:
                active.running.add(tp, records)
            else:
                # Restoring, or its other input is not here yet: keep them until it runs
                # (the partition is paused meanwhile; nothing is fetched twice).
                self._waiting[task_id].append((tp, records))
        return count

    def process(
        self, now_ms: float, lag: Callable[[TopicPartition], int | None], budget: int = 500
    ) -> int:
        """Process up to `budget` buffered records (scheduler.py)."""
        return self.scheduler.process(self._running, now_ms, lag, budget, self._full)

    def positions(self, task_ids: Iterable[TaskId] | None = None) -> dict[TopicPartition, int]:
        """Offsets to commit: the position of each input partition a running task has started
        on (one task reads a partition: those sharing a topic are one sub-topology)."""
        chosen = self.active.keys() if task_ids is None else task_ids
        running = (self.active[t].running for t in chosen if t in self.active)
        return {tp: at for r in running if r is not None for tp, at in r.positions().items()}

    def still_owned(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """`offsets` without the partitions revoked since they were taken: their revocation
        committed them itself, later (process/at_least_once.py), and an older position
        must not go over it."""
        return {tp: offset for tp, offset in offsets.items() if tp in self._owned}

    def counters(self) -> dict[str, tuple[JoinCounters, int]]:
        """Per join: its counters and dead letters, over every task this worker has run."""
        return self.totals.counters(self._running_tasks())

    def rekeyed(self) -> Counter[str]:
        """Records each key_by sub-topology wrote to its repartition topic, on this worker."""
        return self.totals.rekeyed(self._running_tasks())

    def tasks_per_subtopology(self) -> Counter[str]:
        return Counter(task_id.subtopology for task_id in self.active)

    def apply_backpressure(self, max_bytes: int, limit: int = MAX_BUFFERED_PER_INPUT) -> None:
        """Pause the inputs of which a task has over `limit` records buffered and, while all
        tasks' buffered records take over `max_bytes`, those with any; resume the others (see
        `inputs_to_pause`)."""
        full = inputs_to_pause(self._buffered_by_input(), limit, max_bytes, self.record_size)
        if full != self._full:
            self._full = full
            self._apply_pauses()

    def buffered(self) -> int:
        return sum(a.running.buffered() for a in self.active.values() if a.running is not None)

    def buffered_bytes(self) -> int:
        """Memory of the records waiting in the input buffers, estimated (input_size.py)."""
        return self.record_size.bytes_of(sum(self._buffered_by_input().values()))

    def _buffered_by_input(self) -> dict[TopicPartition, int]:
        buffered: dict[TopicPartition, int] = {}
        for a in self.active.values():
            if a.running is not None:
                buffered.update(a.running.buffered_by_input())
        return buffered

    async def lose_all(self) -> None:
        """Drop every task without committing (exactly-once, when the transaction fails)."""
        await self.on_lost(frozenset(self._owned))

    async def close(self) -> None:
        """Stop opening tasks, finish closing the tasks with no role here (the worker closes
        the state manager itself)."""
        await self.scheduler.close()
        await self._standbys.close()
        for active in self.active.values():
            if active.opening is not None:
                active.opening.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await active.opening

    # -- internals ------------------------------------------------------------------------------

    def _running_tasks(self) -> list[MemberTask]:
        return [m for a in self.active.values() if a.running is not None for m in a.running.members]

    def _complete_tasks(self, partitions: Iterable[TopicPartition]) -> set[TaskId]:
        """Tasks for which this worker now owns every input partition."""
        found: set[TaskId] = set()
        for tp in partitions:
            name = self._readers.get(tp.topic)
            if name is None:
                continue
            task_id = TaskId(name, tp.partition)
            if all(i in self._owned for i in self._inputs(task_id)):
                found.add(task_id)
        return found

    def _forget_waiting(self, partitions: frozenset[TopicPartition]) -> None:
        """Drop records held for tasks that read these partitions: never processed, so never
        committed, and their next owner fetches them again."""
        self.writes.forget(partitions)
        for task_id in list(self._waiting):
            if partitions & set(self._inputs(task_id)):
                del self._waiting[task_id]

    def _tasks_reading(self, partitions: Iterable[TopicPartition]) -> list[TaskId]:
        gone = set(partitions)
        return sorted(t for t, a in self.active.items() if gone & set(a.inputs))

    def _inputs(self, task_id: TaskId) -> tuple[TopicPartition, ...]:
        partition = task_id.partition
        return tuple(
            TopicPartition(t, partition) for t in self.topology.inputs(task_id.subtopology)
        )

    def _open(self, task_id: TaskId) -> None:
        """Start the task, or open its stores in the background, after the rebalance callback
        has returned: 512 tasks' opens held the callback 91 s, and the group's next rebalance
        waited on it, as it did on a task whose directory another process still held."""
        active = self.active[task_id]
        if not self.topology.is_stateful(task_id.subtopology):  # key_bys, global-table joins
            self._start(active, task_id, None)
            return
        self.roles.standby.discard(task_id)
        spec = self.topology.task_spec(task_id)

        async def become_ready() -> None:
            state = await self._open_when_reachable(task_id, spec)
            await state.wait_ready()
            self._start(active, task_id, state)

        active.opening = asyncio.create_task(become_ready(), name=f"open {task_id}")
        active.opening.add_done_callback(self._opened)

    async def _open_when_reachable(self, task_id: TaskId, spec: TaskSpec) -> TaskState:
        """Open the task's state, waiting out a broker that does not answer (opening asks it
        for the changelogs) as the rest of the worker does: the broker watch decides when it
        is gone for good, in one line."""
        said = False
        while True:
            try:
                return await self._state.open_active(spec)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                if not said:  # once: the broker watch says how long the broker has been away
                    said = True
                    logger.warning(
                        "task %s waits for the broker to open (%s); trying again every %.0f s",
                        task_id,
                        exc,
                        OPEN_RETRY_S,
                    )
                await asyncio.sleep(OPEN_RETRY_S)

    def _start(self, active: _Active, task_id: TaskId, state: StoreLookup | None) -> None:
        """Run the task: each of its members, fed what was fetched for it meanwhile."""
        app = self.app
        members = [
            (
                member,
                member_task(
                    member,
                    task_id,
                    app=app,
                    state=state,
                    sink=self._sink,
                    global_tables=self.global_tables,
                    writes=self.writes,
                ),
            )
            for member in self.topology.members(task_id.subtopology)
        ]
        running = running_task(task_id, active.inputs, members, app.settings.max_task_idle_ms)
        for tp, records in self._waiting.pop(task_id, ()):
            running.add(tp, records)
        active.running = self._running[task_id] = running
        active.opening = None
        logger.info("task %s is running", task_id)
        self._apply_pauses()

    def _opened(self, opening: asyncio.Task[None]) -> None:
        if not opening.cancelled() and opening.exception() is not None:
            self.failure = self.failure or opening.exception()

    async def _drop(self, task_id: TaskId, *, clean: bool) -> None:
        active = self.active.pop(task_id, None)
        self._running.pop(task_id, None)
        if active is None:  # dropped meanwhile: lose_all beside the group's on_lost, say
            return
        self.totals.retire(active.running.members if active.running is not None else ())
        if active.opening is not None:
            active.opening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await active.opening
        if not self.topology.is_stateful(task_id.subtopology):
            logger.info("task %s %s", task_id, "closed" if clean else "lost")
            return
        if self._state.task(str(task_id)) is None:  # revoked before its stores opened
            logger.info("task %s dropped before it opened", task_id)
            return
        if clean:
            await self._state.suspend(str(task_id))
        else:
            await self._state.close_task(str(task_id), clean=False)
        logger.info("task %s %s", task_id, "suspended" if clean else "lost")

    def _apply_pauses(self) -> None:
        """Pause exactly the owned partitions that no running task reads (a task restoring,
        or one whose other input is not here yet), and those with a full buffer."""
        running = {tp for a in self.active.values() if a.running is not None for tp in a.inputs}
        running -= self._full
        if self.fetch is not None:
            self.fetch.pause(self._owned - running)
            self.fetch.resume(self._owned & running)
