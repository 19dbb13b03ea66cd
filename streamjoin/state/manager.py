"""The worker's entry point to local state: opens, restores, replicates, commits and closes the
state of its tasks, and reports the figures the task assignor and the CLI need.

The runtime drives it:
    manager = StateManager(state_dir=..., app_id=..., bootstrap=..., producer=producer)
    await manager.start()
    task = await manager.open_active(spec)   # restores in the background
    await task.wait_ready()                  # other tasks may still be restoring
    task.window("left").put(...)             # processing
    await producer.flush()                   # commit loop: outputs delivered,
    await manager.commit()                   #   changelogs confirmed, then checkpoints,
    ...                                      #   then the input offsets are committed
    manager.offset_sums()                    # for the task assignor's SubscriptionInfo
    await manager.close()
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocksdict import Rdict

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.state.changelog_topics import ensure_changelogs, store_topic
from streamjoin.state.checkpoint import CheckpointUnreadable, read_checkpoint
from streamjoin.state.end_offsets import ChangelogEnds
from streamjoin.state.errors import ChangelogWriteError, StateError
from streamjoin.state.events import StateEvents, StateListener
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.phases import TaskPhase
from streamjoin.state.reader import ChangelogReader, ReaderConfig
from streamjoin.state.specs import TaskSpec
from streamjoin.state.task_lock import TaskLock
from streamjoin.state.task_state import TaskState
from streamjoin.state.task_stores import open_databases

__all__ = ("StateConfig", "StateManager")


@dataclass(frozen=True, slots=True)
class StateConfig:
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    progress_interval_s: float = 0.5
    """Least time between two RestoreProgress events of one task."""
    max_pending_writes: int = 100_000
    """`needs_flush` turns true once running tasks hold this many unflushed writes."""
    lock_timeout_s: float = 60.0
    """How long opening a task waits for another process of the host to close it."""


class StateManager:
    """Local state of all of one worker's tasks (active, standby, suspended)."""

    def __init__(
        self,
        *,
        state_dir: Path | str,
        app_id: str,
        bootstrap: KafkaTarget,
        producer: Any,
        config: StateConfig | None = None,
        memory: MemoryBudget | None = None,
    ) -> None:
        """`producer`: a started aiokafka producer without serializers, owned by the caller.
        `memory`: the budget every store of every task opened here shares (default 256 MiB)."""
        self.app_id = app_id
        self.config = config or StateConfig()
        self.memory = memory or MemoryBudget()
        self.directory = StateDirectory(state_dir, app_id)
        self.events = StateEvents()
        self._bootstrap = bootstrap
        self._producer = producer
        self._reader = ChangelogReader(bootstrap, self.config.reader)
        self.ends = ChangelogEnds(bootstrap)
        """Reads changelog ends: for the task assignor, and to promote a standby in place."""
        self._tasks: dict[str, TaskState] = {}
        self._known_changelogs: set[str] = set()
        self._changelog_lock = asyncio.Lock()
        self._opening_stores = asyncio.Lock()
        """One task's databases open at a time: tasks opened all at once (hundreds, given to a
        worker in one rebalance) stalled the event loop for seconds."""

    async def start(self) -> None:
        await self._reader.start()

    async def close(self, *, clean: bool = True) -> None:
        """Close every task (clean: flush and checkpoint first; not when the broker is gone,
        since nothing could be confirmed), then the changelog reader."""
        for task in list(self._tasks.values()):
            await task.close(clean=clean)
        self._tasks.clear()
        await self.ends.close()
        await self._reader.close()

    def subscribe(self, listener: StateListener) -> Callable[[], None]:
        """Receive RestoreStarted/Progress/Completed and StateWiped events."""
        return self.events.subscribe(listener)

    def task(self, task_id: str) -> TaskState | None:
        return self._tasks.get(task_id)

    @property
    def tasks(self) -> dict[str, TaskState]:
        return dict(self._tasks)

    async def open_active(self, spec: TaskSpec) -> TaskState:
        """Make `spec` an active task here: restore in the background, then RUNNING.

        A task already open on this worker (suspended, standby) keeps its stores and reads only
        what its changelogs gained since. Await `wait_ready()` on the result before processing.
        """
        task = await self._open(spec)
        await task.activate()
        return task

    async def open_standby(self, spec: TaskSpec) -> TaskState:
        """Make `spec` a standby (or learner) here: tail its changelogs until told otherwise."""
        self.ends.prepare()  # its promotion will read the ends
        task = await self._open(spec)
        await task.become_standby()
        return task

    async def suspend(self, task_id: str) -> None:
        """Stop the task but keep its stores open, in case it comes back to this worker."""
        await self._get(task_id).suspend()

    async def close_task(self, task_id: str, *, clean: bool = True) -> None:
        """Close a task's stores (clean: flush and checkpoint first; see TaskState.close)."""
        task = self._tasks.pop(task_id, None)
        if task is not None:
            await task.close(clean=clean)

    async def flush(self, task_ids: Collection[str] | None = None) -> None:
        """Flush every running active (confirm changelog writes, apply them locally), or only
        those of `task_ids`.

        Raises ChangelogWriteError if any failed; those tasks are SUSPENDED (see TaskState.flush).
        """
        running = [t for t in self._chosen(task_ids) if t.phase is TaskPhase.RUNNING]
        results = await asyncio.gather(*(task.flush() for task in running), return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        if not failures:
            return
        if len(failures) == 1 or not all(isinstance(f, ChangelogWriteError) for f in failures):
            raise failures[0]
        raise ChangelogWriteError("; ".join(str(failure) for failure in failures)) from failures[0]

    async def commit(self, task_ids: Collection[str] | None = None) -> None:
        """The state part of the commit loop: flush, then write the checkpoints of open tasks
        whose changelogs moved far enough (task_stores.CHECKPOINT_AFTER_RECORDS; not of
        restoring ones: their unlogged bulk writes would cost a memtable flush each
        time; they are checkpointed once running, or when suspended or closed). `task_ids`:
        only these (a revocation commits the leaving tasks alone).

        Commit input offsets only after this returns; if it raises ChangelogWriteError, do not.
        """
        await self.flush(task_ids)
        checkpointed = [t for t in self._chosen(task_ids) if t.phase is not TaskPhase.RESTORING]
        await asyncio.gather(*(task.checkpoint_off_loop() for task in checkpointed))

    async def prepare_commit(self) -> None:
        """Exactly-once, before the transaction commits: every running active's changelog
        writes are taken by the broker (in the transaction), none written to RocksDB yet.
        Raises as `flush`; then abort the transaction."""
        running = [task for task in self._tasks.values() if task.phase is TaskPhase.RUNNING]
        results = await asyncio.gather(
            *(task.prepare_commit() for task in running), return_exceptions=True
        )
        failures = [result for result in results if isinstance(result, BaseException)]
        if failures:
            raise failures[0]

    def complete_commit(self) -> None:
        """Exactly-once, once the transaction committed: the prepared writes go to RocksDB and
        the checkpoints, once far enough behind, name the changelog offsets they reach (so a
        store never holds a write of an aborted transaction, and a restore from its checkpoint
        replays committed writes only)."""
        for task in self._tasks.values():
            task.complete_commit()
            if task.phase is TaskPhase.STANDBY:
                task.checkpoint(enforce=False)

    def read_ends_ahead(self, task_ids: Iterable[str]) -> None:
        """Start reading the changelog ends of these standbys now, for their promotion. Called
        when a JoinGroup answers: every member has joined, so their previous owners have
        confirmed every write and revoked them; the read then overlaps the leader's assignment
        and the SyncGroup instead of following them (issue 40, item 2). Forgets the ends read
        ahead at the previous join."""
        standbys = [
            t for i in task_ids if (t := self._tasks.get(i)) and t.phase is TaskPhase.STANDBY
        ]
        self.ends.read_ahead(
            TopicPartition(task.local.topics[name], task.spec.partition)
            for task in standbys
            for name in task.stores
        )

    @property
    def needs_flush(self) -> bool:
        """Unflushed writes exceed `max_pending_writes`: call `flush()` (or commit) soon."""
        pending = sum(task.pending_writes for task in self._tasks.values())
        return pending >= self.config.max_pending_writes

    def offset_sums(self) -> dict[str, int]:
        """Task id -> offset sum, for every task with local state: -2 for a running active, the
        sum of changelog positions otherwise, read from the checkpoint for unopened tasks."""
        sums = {task_id: task.offset_sum() for task_id, task in self._tasks.items()}
        for task_id in self.directory.task_ids_on_disk():
            if task_id in sums:
                continue
            try:
                checkpoint = read_checkpoint(self.directory.checkpoint_path(task_id))
            except CheckpointUnreadable:
                continue
            if checkpoint:
                sums[task_id] = sum(entry.offset for entry in checkpoint.values())
        return sums

    async def _open(self, spec: TaskSpec) -> TaskState:
        task = self._tasks.get(spec.task_id)
        if task is not None and task.spec != spec:
            await self.close_task(spec.task_id)
            task = None
        if task is None:
            await self._ensure_changelogs(spec)
            lock = await TaskLock.acquire(
                self.directory.task_dir(spec.task_id),
                spec.task_id,
                timeout_s=self.config.lock_timeout_s,
            )
            opened: dict[str, Rdict] = {}
            try:
                async with self._opening_stores:
                    opened = await open_databases(spec, self.directory, self.memory)
                task = TaskState(
                    spec,
                    app_id=self.app_id,
                    directory=self.directory,
                    producer=self._producer,
                    reader=self._reader,
                    events=self.events,
                    progress_interval_s=self.config.progress_interval_s,
                    memory=self.memory,
                    lock=lock,
                    ends=self.ends.ends_ahead,
                    opened=opened,
                )
            except BaseException:
                for db in opened.values():  # those TaskStores did not take
                    db.close()
                lock.release()
                raise
            self._tasks[spec.task_id] = task
            # Opening the stores held the event loop (RocksDB creates and syncs files): let
            # heartbeats and fetches run before the next task opens, or a worker given hundreds
            # of tasks at once misses its session timeout while opening them.
            await asyncio.sleep(0)
        return task

    def _chosen(self, task_ids: Collection[str] | None) -> list[TaskState]:
        if task_ids is None:
            return list(self._tasks.values())
        return [task for task_id in task_ids if (task := self._tasks.get(task_id)) is not None]

    def _get(self, task_id: str) -> TaskState:
        task = self._tasks.get(task_id)
        if task is None:
            raise StateError(f"task {task_id!r} has no open state on this worker")
        return task

    async def _ensure_changelogs(self, spec: TaskSpec) -> None:
        """Create or check the task's changelogs once per topic (never let the broker auto-create
        one with a default partition count)."""
        async with self._changelog_lock:
            missing = {
                store: spec.partition_count
                for store in spec.stores
                if store_topic(self.app_id, store) not in self._known_changelogs
            }
            if missing:
                await ensure_changelogs(self._bootstrap, self.app_id, missing)
                self._known_changelogs.update(store_topic(self.app_id, s) for s in missing)
