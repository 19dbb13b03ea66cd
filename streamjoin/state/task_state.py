"""The local state of one task: its stores, their changelog positions, its role, its checkpoint.

Phases:  RESTORING (active, catching up) -> RUNNING (active, processing; writes allowed)
         STANDBY (tails the changelogs forever)      SUSPENDED (open, idle)      CLOSED
Any open phase may move to any other; the stores stay open throughout, so a task that comes
back to this worker reads only what its changelogs gained meanwhile (usually nothing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from rocksdict import Rdict

from streamjoin.assignment.model import TopicPartition
from streamjoin.state.errors import ChangelogWriteError, StateError
from streamjoin.state.events import RestoreCompleted, RestoreProgress, RestoreStarted, StateEvents
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.open_transactions import OpenTransactionWait
from streamjoin.state.phases import RUNNING_ACTIVE_OFFSET_SUM, ReadEnds, TaskPhase
from streamjoin.state.reader import ChangelogReader
from streamjoin.state.specs import TaskSpec
from streamjoin.state.store_changelog import StoreChangelog
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.state.task_lock import TaskLock
from streamjoin.state.task_stores import TaskStores
from streamjoin.state.task_writers import TaskWriters

__all__ = ("TaskState",)

logger = logging.getLogger(__name__)


class TaskState:
    """Created and driven by StateManager; the runtime reads `phase` and uses the stores."""

    def __init__(
        self,
        spec: TaskSpec,
        *,
        app_id: str,
        directory: StateDirectory,
        producer: Any,
        reader: ChangelogReader,
        events: StateEvents,
        progress_interval_s: float,
        memory: MemoryBudget,
        lock: TaskLock | None = None,
        ends: ReadEnds | None = None,
        opened: dict[str, Rdict] | None = None,
    ) -> None:
        """`lock`: the task directory's lock, released once the stores are closed. `ends`:
        reads changelog ends, to promote a standby in place (else it starts reading over).
        `opened`: store name -> its database, opened ahead (TaskStores takes what it uses)."""
        self.spec = spec
        self.task_id = spec.task_id
        self.phase = TaskPhase.SUSPENDED
        self.restored = 0
        """Records applied from the changelogs since the task last began reading."""
        self._reader = reader
        self._events = events
        self._progress_interval_s = progress_interval_s
        self._sent: dict[str, int | None] | None = None
        """Changelog ends confirmed by `prepare_commit`, until the transaction commits."""
        self._highwaters: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self._dir_lock = lock
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._read_started = 0.0
        self._read_seconds = 0.0
        self._last_progress = 0.0
        self._caught_up_at: float | None = None
        """When (monotonic) the stores last reflected their changelogs' ends."""
        self._last_lag: int | None = None
        """The lag last measured, for the moment a change of phase leaves the ends unknown."""
        self._read_ends = ends
        self._before_running: asyncio.Task[None] | None = None
        """What a restored active waits for before it runs: the changelog ends a standby
        promoted in place must reach, or RocksDB compacting what its restore piled up."""
        self._floors: dict[str, int] = {}
        """Those ends, by store: a high watermark seen in an older fetch response is not less."""
        self._open_transaction = OpenTransactionWait(spec.task_id)
        self.local = TaskStores(
            spec, app_id=app_id, directory=directory, events=events, memory=memory, opened=opened
        )
        self._writers = TaskWriters(producer, self.local)

    # -- stores -------------------------------------------------------------------------------

    @property
    def stores(self) -> dict[str, LocalStore]:
        return self.local.stores

    @property
    def positions(self) -> dict[str, int | None]:
        """Store name -> changelog offset its local data reflects (None: read from the start)."""
        return self.local.positions

    def kv(self, name: str) -> KeyValueStore:
        return self.local.typed(name, KeyValueStore)

    def window(self, name: str) -> WindowStore:
        return self.local.typed(name, WindowStore)

    def versioned(self, name: str) -> VersionedStore:
        return self.local.typed(name, VersionedStore)

    # -- figures for the assignor, the CLI and metrics -----------------------------------------

    @property
    def pending_writes(self) -> int:
        return self.local.pending_writes

    def offset_sum(self) -> int:
        """-2 for a running active, else the sum of the stores' changelog positions."""
        if self.phase is TaskPhase.RUNNING:
            return RUNNING_ACTIVE_OFFSET_SUM
        return self.local.position_sum()

    def lag(self) -> int | None:
        """Records behind the changelogs' ends; 0 when running, None while an end is unknown."""
        if self.phase is TaskPhase.RUNNING:
            return 0
        if len(self._highwaters) < len(self.stores):
            return None
        return sum(
            max(0, self._highwaters[name] - (position or 0))
            for name, position in self.positions.items()
        )

    def read_lag(self) -> tuple[int, int] | None:
        """How far a read of the stores may be behind their changelogs: in records, and in ms
        since they last were at the ends (0, 0 when running or caught up). A copy changing
        phase reports its last measured lag; None if it never measured one."""
        lag = self.lag()
        if lag is None:
            lag = self._last_lag
        if lag is None:
            return None
        if lag == 0:
            return 0, 0
        since = self._caught_up_at if self._caught_up_at is not None else self._read_started
        return lag, int((time.monotonic() - since) * 1000)

    async def wait_ready(self) -> None:
        """Return once the task is a running active; raise if it fails or leaves RESTORING."""
        await asyncio.shield(self._ready)

    # -- lifecycle (driven by StateManager) ------------------------------------------------------

    async def activate(self) -> None:
        """Become an active: read the changelogs up to their ends, then RUNNING."""
        async with self._lock:
            self._check_open()
            if self.phase in (TaskPhase.RUNNING, TaskPhase.RESTORING):
                return
            self._ready = asyncio.get_running_loop().create_future()
            if self.phase is TaskPhase.STANDBY and self._read_ends is not None:
                self._promote()
                return
            self.phase = TaskPhase.RESTORING
            self._begin_reading(standby=False)

    def _promote(self) -> None:
        """Standby -> RESTORING in place, reading on to ends read afresh (its last ones may
        predate its previous owner's last writes); starting over cost 0.2-0.5 s of a hand-off."""
        self.phase = TaskPhase.RESTORING
        self.restored = 0
        self._read_started = time.monotonic()
        self._open_transaction.clear()
        start = {name: position or 0 for name, position in self.positions.items()}
        self._events.publish(RestoreStarted(self.task_id, False, start))
        self._before_running = asyncio.create_task(self._reach_ends())

    async def _reach_ends(self) -> None:
        assert self._read_ends is not None
        topics = self.local.topics
        try:
            ends = await self._read_ends(
                TopicPartition(topics[name], self.spec.partition) for name in self.stores
            )
        except Exception as exc:  # noqa: BLE001 - reading afresh is as correct, only slower
            logger.warning("task %s: no changelog ends (%s); it reads over", self.task_id, exc)
            self._before_running = None
            self._stop_reading()
            self._begin_reading(standby=False)
            return
        self._before_running = None
        for name in self.stores:
            end = ends[TopicPartition(topics[name], self.spec.partition)]
            self._floors[name] = end
            self._highwaters[name] = max(self._highwaters.get(name, end), end)
        if self.lag() == 0:
            self._complete_restore()

    async def become_standby(self) -> None:
        """Tail the changelogs continuously (standby or learner)."""
        async with self._lock:
            self._check_open()
            if self.phase is TaskPhase.STANDBY:
                return
            await self._leave_phase("it became a standby")
            self.phase = TaskPhase.STANDBY
            self._begin_reading(standby=True)

    async def suspend(self) -> None:
        """Stop processing or reading; flush and checkpoint; keep the stores open."""
        async with self._lock:
            if self.phase in (TaskPhase.SUSPENDED, TaskPhase.CLOSED):
                return
            await self._leave_phase("it was suspended")
            self.checkpoint()
            self.phase = TaskPhase.SUSPENDED

    async def close(self, *, clean: bool = True) -> None:
        """Close the stores. Clean: flush (a failed flush is logged, not raised: the writes it
        drops are reprocessed from the input) and checkpoint. Not clean (the task was lost):
        drop unconfirmed writes and leave the last checkpoint as it is."""
        async with self._lock:
            if self.phase is TaskPhase.CLOSED:
                return
            if clean:
                try:
                    await self._leave_phase("it was closed")
                except ChangelogWriteError as exc:  # the task is consistent without them
                    logger.warning(
                        "task %s closes without its unconfirmed writes: %s", self.task_id, exc
                    )
                self.checkpoint()
            else:
                self._stop_reading()
                await self._writers.close()
                self._fail_ready(StateError(f"task {self.task_id!r} was closed"))
            self.phase = TaskPhase.CLOSED
            try:
                await self.local.close_off_loop()
            finally:
                if self._dir_lock is not None:
                    self._dir_lock.release()

    async def flush(self) -> None:
        """Running active: wait for the broker to confirm the changelog writes so far, then
        write them to RocksDB. On ChangelogWriteError the task is SUSPENDED with its
        unconfirmed writes dropped: do not commit input offsets; activate it again."""
        async with self._lock:
            if self.phase is TaskPhase.RUNNING:
                await self._flush_locked()

    def checkpoint(self, *, enforce: bool = True) -> None:
        """Durably record the stores' positions (see TaskStores.checkpoint). For a running
        active the positions cover only flushed writes: call after `flush`."""
        if self.phase is not TaskPhase.CLOSED:
            self.local.checkpoint(enforce=enforce)

    async def checkpoint_off_loop(self) -> None:
        """At a commit: `checkpoint` once the changelogs moved past CHECKPOINT_AFTER_RECORDS;
        a running active syncs on a thread (lock held: no flush, no close)."""
        async with self._lock:
            if self.phase is TaskPhase.RUNNING:
                await self.local.checkpoint_off_loop(enforce=False)
            else:
                self.checkpoint(enforce=False)

    def _check_open(self) -> None:
        if self.phase is TaskPhase.CLOSED:
            raise StateError(
                f"task {self.task_id!r} is closed; open it again through the StateManager"
            )

    async def _leave_phase(self, why: str) -> None:
        if self.phase is TaskPhase.RUNNING:
            await self._flush_locked()
            await self._writers.close()
        elif self.phase in (TaskPhase.RESTORING, TaskPhase.STANDBY):
            self._stop_reading()
        self._fail_ready(StateError(f"task {self.task_id!r} will not run: {why}"))

    async def prepare_commit(self) -> None:
        """Exactly-once, running active: send the changelog writes so far and wait for the
        broker to take them (inside the open transaction), without writing them to RocksDB:
        `complete_commit` does that once the transaction has committed, so the local database
        never holds a write that may yet be aborted. ChangelogWriteError as in `flush`."""
        async with self._lock:
            if self.phase is TaskPhase.RUNNING:
                self._sent = await self._send_locked()

    def complete_commit(self) -> None:
        """The transaction committed: write what `prepare_commit` sent to RocksDB, checkpoint."""
        if self.phase is TaskPhase.RUNNING and self._sent is not None:
            self._writers.apply(self._sent)
            self.checkpoint(enforce=False)
        self._sent = None

    async def _flush_locked(self) -> None:
        self._writers.apply(await self._send_locked())

    async def _send_locked(self) -> dict[str, int | None]:
        try:
            return await self._writers.send()
        except ChangelogWriteError:
            self.phase = TaskPhase.SUSPENDED
            raise

    def _fail_ready(self, error: StateError) -> None:
        if not self._ready.done():
            self._ready.set_exception(error)
            self._ready.exception()  # a later wait_ready() still raises; nobody waiting is fine

    # -- reading changelogs (callbacks from the reader) ----------------------------------------

    def _begin_reading(self, *, standby: bool) -> None:
        self.restored = 0
        self._read_started = self._last_progress = time.monotonic()
        self._highwaters.clear()
        self._open_transaction.clear()
        for name, store in self.stores.items():
            self._reader.track(
                self.local.topics[name], self.spec.partition, StoreChangelog(self, store)
            )
        start = {name: position or 0 for name, position in self.positions.items()}
        self._events.publish(RestoreStarted(self.task_id, standby, start))

    def _stop_reading(self) -> None:
        for name in self.stores:
            self._reader.untrack(self.local.topics[name], self.spec.partition)
        self._highwaters.clear()
        self._floors.clear()
        if self._before_running is not None:
            self._before_running.cancel()
            self._before_running = None

    def on_progress(self, store: str, position: int, highwater: int, stable: int) -> None:
        """A restoring active reads on to every record written (`highwater`): the broker
        writes a commit's markers after the commit returns, so a previous owner's last writes
        may still be past the last stable offset while the input offsets committed with them
        are already read. A standby is at the end once it has what is committed (`stable`)."""
        self.positions[store] = position
        restoring = self.phase is TaskPhase.RESTORING
        end = highwater if restoring else stable
        self._highwaters[store] = max(end, self._floors.get(store, end))
        if restoring:
            self._open_transaction.observe(store, position, stable, highwater, time.monotonic())
        remaining = self.lag()
        if remaining is not None:
            self._last_lag = remaining
        if remaining == 0:
            self._caught_up_at = time.monotonic()
        if self.phase is TaskPhase.RESTORING and remaining == 0 and self._before_running is None:
            self._complete_restore()
            return
        now = time.monotonic()
        if now - self._last_progress >= self._progress_interval_s:
            self._last_progress = now
            standby = self.phase is TaskPhase.STANDBY
            self._events.publish(RestoreProgress(self.task_id, standby, self.restored, remaining))

    def _complete_restore(self) -> None:
        self._stop_reading()
        self._read_seconds = time.monotonic() - self._read_started  # its compaction apart
        for store in self.stores.values():
            store.flush_in_background()  # the next checkpoint (commit) finds it done
        if self.local.piled():  # reads through the pile would stall the worker: wait it out
            self._before_running = asyncio.create_task(self.local.until_compacted(self._run))
        else:
            self._run()

    def _run(self) -> None:
        self._before_running = None
        self._writers.attach()
        self.phase = TaskPhase.RUNNING
        seconds = self._read_seconds
        logger.info("task %s restored %d records in %.2fs", self.task_id, self.restored, seconds)
        self._events.publish(RestoreCompleted(self.task_id, self.restored, seconds))
        if not self._ready.done():
            self._ready.set_result(None)

    def on_reset(self, store: LocalStore, reason: str) -> None:
        self.local.wipe(store, reason)
        self._highwaters.pop(store.name, None)

    def on_failure(self, error: BaseException) -> None:
        self._stop_reading()
        if self.phase in (TaskPhase.RESTORING, TaskPhase.STANDBY):
            self.phase = TaskPhase.SUSPENDED
        self._fail_ready(
            StateError(f"task {self.task_id!r}: reading its changelogs failed: {error}")
        )
