"""The commit at a revocation (at-least-once): the leaving tasks only, beside any commit in flight.

The follow-up rebalance that hands revoked tasks to their new owner starts only once
`on_revoked` has returned, so every moment of this commit is a moment those tasks pause (issue
40, item 2). It used to be the worker's periodic commit of every task, taken under the commit
lock: it first waited for a periodic commit or state flush of the other tasks already in flight
(the loop starts them in the background, pacing.py), then flushed and checkpointed every task
again. Here only what the leaving tasks' offsets depend on is waited for, in the order that
makes committing them safe:

    their input positions, taken first (processing goes on meanwhile; later records are
      processed again by the next owner, as after any commit)
    -> every output delivery sent so far acknowledged (ProducerSink.flush: an overlapping
       flush waits for the deliveries an earlier one waits for too)
    -> their changelog writes confirmed and applied, their checkpoints written
       (StateManager.commit(task_ids); each task's lock orders this with a periodic flush
       of the same task)
    -> their offsets committed.

A periodic commit that took its positions before the revocation must then not commit the
revoked partitions' older positions over these (`TaskManager.still_owned`). Both end in
`commit_offsets`. Exactly-once never comes here: every task's output is in the one open
transaction, committed as a whole (exactly_once.py).
"""

from __future__ import annotations

import time
from typing import Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.errors import CommitFailedError
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.output.purge import RepartitionPurger
from streamjoin.runtime.process.broker_watch import BrokerWatch, report_not_committed
from streamjoin.runtime.process.slow_commit import said_while_uncommitted, waited
from streamjoin.runtime.tasks.manager import TaskManager
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.manager import StateManager

__all__ = ("commit_offsets", "commit_revoked")


class CommittingWorker(Protocol):
    """What of the worker (worker.py) its commits use."""

    manager: TaskManager | None
    sink: ProducerSink | None
    state: StateManager
    consumer: CooperativeConsumer
    purger: RepartitionPurger
    watch: BrokerWatch | None
    commits_refused: bool
    last_commit_ms: int | None


async def commit_revoked(worker: CommittingWorker, tasks: frozenset[TaskId]) -> None:
    """Commit the input offsets of the revoked `tasks` once their outputs and changelog writes
    are safe. Raises what the sink or the state raise (nothing is committed then); a refused
    commit is reported, as any."""
    manager, sink = worker.manager, worker.sink
    assert manager is not None and sink is not None
    if worker.commits_refused:
        return
    offsets = manager.positions(tasks)
    await waited(sink.flush(), "the outputs to be delivered")
    await waited(
        worker.state.commit([str(t) for t in tasks]), "the changelog writes and checkpoints"
    )
    await commit_offsets(worker, offsets)


async def commit_offsets(worker: CommittingWorker, offsets: dict[TopicPartition, int]) -> None:
    """The last step of every commit (at-least-once): the input offsets, once all they cover is
    safe; a refusal is reported (broker_watch.py), not raised."""
    if not offsets:
        return
    try:
        await waited(worker.consumer.commit(offsets), "the group coordinator")
    except CommitFailedError as exc:
        report_not_committed(exc, worker.watch)
        if exc.retriable:
            said_while_uncommitted(worker.last_commit_ms, exc, time.time() * 1000)
        return
    worker.last_commit_ms = int(time.time() * 1000)
    worker.purger.after_commit(offsets)
