"""Commits under at-least-once: the input offsets of some tasks, once all they caused is safe.

One sequence serves the worker's periodic commit (every task, under its commit lock) and a
revocation's commit (the leaving tasks only, beside any commit in flight), in the order that makes
committing safe:

    the input positions, taken first (processing goes on meanwhile; later records are
      processed again by the next owner, as after any commit)
    -> every output delivery sent so far acknowledged (ProducerSink.flush: an overlapping
       flush waits for the deliveries an earlier one waits for too)
    -> the changelog writes confirmed and applied, the checkpoints written
       (StateManager.commit(task_ids); each task's lock orders this with a periodic flush
       of the same task)
    -> the offsets committed.

The follow-up rebalance that hands revoked tasks to their new owner starts only once
`on_revoked` has returned, so every moment of a revocation's commit is a moment those tasks pause
(issue 40, item 2): it waits for nothing of the other tasks. A periodic commit that took its
positions before a revocation must then not commit the revoked partitions' older positions over
the revocation's (`TaskManager.still_owned`). Exactly-once never comes here: every task's output
is in the one open transaction, committed as a whole (exactly_once.py).
"""

from __future__ import annotations

import time
from typing import Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.errors import CommitFailedError
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.output.purge import RepartitionPurger
from streamjoin.runtime.process.broker_watch import BrokerWatch
from streamjoin.runtime.process.slow_commit import report_refused, waited
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

__all__ = ("CommittingWorker", "commit_tasks")


class CommittingWorker(Protocol):
    """What of the worker (worker.py) its commits use."""

    manager: TaskManager | None
    sink: ProducerSink | None
    state: StateManager
    consumer: CooperativeConsumer
    purger: RepartitionPurger
    watch: BrokerWatch | None
    global_tables: GlobalTables
    commits_refused: bool
    last_commit_ms: int | None


async def commit_tasks(worker: CommittingWorker, tasks: frozenset[TaskId] | None = None) -> None:
    """Commit the input offsets of `tasks` (every task: None) once their outputs and changelog
    writes are safe. Raises what the sink or the state raise (nothing is committed then); a
    refused commit is reported, not raised. The worker's periodic commit calls it under its
    commit lock; a revocation's commit calls it beside whatever commit is in flight."""
    manager, sink = worker.manager, worker.sink
    assert manager is not None and sink is not None
    if worker.commits_refused:
        return
    offsets = manager.positions(tasks)
    await waited(sink.flush(), "the outputs to be delivered")
    task_ids = None if tasks is None else [str(t) for t in tasks]
    await waited(worker.state.commit(task_ids), "the changelog writes and checkpoints")
    if tasks is None:
        worker.global_tables.checkpoint()
        # Revoked since its positions were taken: the revocation committed them, later.
        offsets = manager.still_owned(offsets)
    await _commit_offsets(worker, offsets, retried=tasks is None)


async def _commit_offsets(
    worker: CommittingWorker, offsets: dict[TopicPartition, int], *, retried: bool
) -> None:
    """The last step: the input offsets, once all they cover is safe. `retried`: a later
    commit of this worker carries them if this one is refused (not so for revoked tasks)."""
    if not offsets:
        return
    try:
        await waited(worker.consumer.commit(offsets), "the group coordinator")
    except CommitFailedError as exc:
        report_refused(
            exc,
            retried=retried,
            broker_lost=worker.watch is not None and worker.watch.lost_since is not None,
            last_commit_ms=worker.last_commit_ms,
            now_ms=time.time() * 1000,
        )
        return
    worker.last_commit_ms = int(time.time() * 1000)
    worker.purger.after_commit(offsets)
