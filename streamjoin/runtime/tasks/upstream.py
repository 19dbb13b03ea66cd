"""How far a join behind a repartition topic may go: no further than the oldest record still
on its way to it (issue 35), or that record arrives behind the join's stream time and is late.

For partition p of a repartition topic, a record may still come from
- a key_by task of this worker: no older than the record it would re-key next (WAITING while
  its input has records on the broker not fetched yet, or none fetched so far);
- this worker's writes not yet fetched back (in_flight.py): no older than the oldest of them;
- a key_by task of another worker: no older than the first record after the offset the group
  has committed for its input partition, read from the broker (remote_upstream.py). That look
  covers what was on the broker when it began: a record the join fetched after it began may
  be newer than records the look did not see, so the join takes none of those before the next
  look.
The join processes no record stamped later than the oldest of these (its limit).

A key_by input partition that is caught up may still be about to receive records older than
those just fetched of other partitions: a producer sends each partition's records in batches
of its own (arrivals.py). So such a partition holds back the join, and the key_by tasks writing
beside it, by what they fetched within the last QUIET_WAIT_MS and stamped later than anything
fetched of it; once fetched that long ago a record goes on (as Kafka Streams'
max.task.idle.ms, for these partitions only). Key_by tasks of other workers caught up when
looked at hold back likewise.

A join whose repartition partition is paused for a full buffer cannot fetch what it waits for:
it goes on without a limit, and says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.runtime.tasks.in_flight import InFlightWrites
from streamjoin.runtime.tasks.ordering import NO_LIMIT, WAITING
from streamjoin.runtime.tasks.running import PartitionLag, RunningTask
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId

__all__ = ("Hop", "RemoteBounds", "RemoteView", "UpstreamGate", "hops", "in_flight_writes")

logger = logging.getLogger(__name__)

FULL_WARNING_S = 60.0


@dataclass(frozen=True, slots=True)
class Hop:
    """A repartition topic, the sub-topology whose tasks write it and the one reading it."""

    topic: str
    writer: str
    reader: str


def hops(topology: AppTopology) -> tuple[Hop, ...]:
    """The repartition topics between two sub-topologies. One that a sub-topology both writes
    and reads (a key_by merged with joins reading its source topic) is none: its task would
    wait for each of its own writes to come back before its next record, one round trip (under
    exactly-once, one commit) a record; such a join reads it as it comes."""
    readers = {topic: name for name in topology.names for topic in topology.inputs(name)}
    found = (
        Hop(r.topic.name, topology.subtopology_of(r.subtopology), readers[r.topic.name])
        for r in topology.repartitions
        if r.topic.name in readers
    )
    return tuple(hop for hop in found if hop.writer != hop.reader)


def in_flight_writes(topology: AppTopology) -> InFlightWrites:
    """A tracker of the worker's writes to the app's repartition topics (each partitioned as
    the sub-topology reading it)."""
    return InFlightWrites({h.topic: topology.partitions[h.reader] for h in hops(topology)})


@dataclass(frozen=True, slots=True)
class RemoteView:
    """What the writer's tasks on other workers may still write is no older than `oldest`, as
    seen by a look that began when the worker's fetching stood at `covered`; `caught_up`: some
    of their input partitions had nothing after the committed offset."""

    oldest: int
    covered: Mapping[TopicPartition, int]
    caught_up: bool = False

    def limit(self, heads: Mapping[TopicPartition, Any]) -> int:
        """The limit it sets a task whose next records are `heads`: `oldest`, and short of
        any record fetched after the look began."""
        limit = self.oldest
        for tp, record in heads.items():
            seen = self.covered.get(tp)
            if seen is None or record.offset >= seen:
                limit = min(limit, record.timestamp - 1)
        return limit


class RemoteBounds(Protocol):
    def view(self, hop: Hop, partition: int, local: frozenset[int]) -> RemoteView | None:
        """Where the writer's tasks on other workers stand, for `partition` of the hop's topic
        (`local`: the writer's partitions this worker runs); None: not known yet."""
        ...


class _AllLocal:
    def view(self, hop: Hop, partition: int, local: frozenset[int]) -> RemoteView | None:
        return RemoteView(NO_LIMIT, {})


class UpstreamGate:
    """The limit of each running task that reads a repartition topic."""

    def __init__(self, topology: AppTopology, writes: InFlightWrites) -> None:
        self.hops = hops(topology)
        self.writers = frozenset(h.writer for h in self.hops)
        self._partitions = topology.partitions
        self._inputs = {name: topology.inputs(name) for name in self.writers}
        self.writes = writes
        self.remote: RemoteBounds = _AllLocal()
        """Where other workers' key_by tasks stand (remote_upstream.py; the worker sets it)."""
        self._told_full: dict[TaskId, float] = {}

    def limits(
        self,
        active: Mapping[TaskId, RunningTask | None],
        now_ms: float,
        lag: PartitionLag,
        full: AbstractSet[TopicPartition] = frozenset(),
    ) -> dict[TaskId, int]:
        """Per running task reading a repartition topic, the latest timestamp it may process
        now (`active`: the worker's tasks, None while restoring; `full`: partitions paused for
        their full buffers)."""
        if not self.hops:
            return {}
        upstream: dict[str, tuple[int, frozenset[int]]] = {}
        quiet: dict[str, int] = {}
        for writer in self.writers:
            next_ts, local, quiet_ts = NO_LIMIT, set[int](), NO_LIMIT
            for task_id, running in active.items():
                if task_id.subtopology != writer:
                    continue
                local.add(task_id.partition)
                ts = WAITING if running is None else running.next_timestamp(now_ms, lag)
                next_ts = min(next_ts, ts)
                if ts == NO_LIMIT:  # caught up: it has nothing as new as what others fetched
                    quiet_ts = min(quiet_ts, self._newest(writer, task_id.partition))
            upstream[writer] = (next_ts, frozenset(local))
            quiet[writer] = quiet_ts
        limits: dict[TaskId, int] = {}
        for task_id, running in active.items():
            if running is not None and task_id.subtopology in quiet:
                held = self._quiet_limit(running, quiet[task_id.subtopology], now_ms)
                if held < NO_LIMIT:
                    limits[task_id] = held
        for task_id, running in active.items():
            if running is None:
                continue
            for hop in self.hops:
                if hop.reader != task_id.subtopology:
                    continue
                tp = TopicPartition(hop.topic, task_id.partition)
                if tp in full:
                    self._unheld(task_id, tp)
                    limits.pop(task_id, None)
                    break
                next_ts, writing_here = upstream[hop.writer]
                on_way = self.writes.oldest(tp)
                limit = min(
                    limits.get(task_id, NO_LIMIT),
                    next_ts,
                    NO_LIMIT if on_way is None else on_way,
                    self._quiet_limit(running, quiet[hop.writer], now_ms),
                )
                if len(writing_here) < self._partitions[hop.writer]:
                    view = self.remote.view(hop, task_id.partition, writing_here)
                    limit = min(limit, WAITING if view is None else view.limit(running.heads()))
                    if view is not None and view.caught_up:
                        limit = min(limit, self._quiet_limit(running, WAITING, now_ms))
                limits[task_id] = limit
        return limits

    def _newest(self, writer: str, partition: int) -> int:
        """The newest timestamp fetched of a writer task's input partitions (WAITING: one
        has had nothing yet)."""
        newest = NO_LIMIT
        for topic in self._inputs[writer]:
            ts = self.writes.arrivals.newest(TopicPartition(topic, partition))
            newest = min(newest, WAITING if ts is None else ts)
        return newest

    def _quiet_limit(self, running: RunningTask, quiet_ts: int, now_ms: float) -> int:
        """How far a task may go while a key_by input partition with nothing newer than
        `quiet_ts` may be about to receive older records: to `quiet_ts`, and through what
        each of its inputs fetched over QUIET_WAIT_MS ago."""
        if quiet_ts == NO_LIMIT:
            return NO_LIMIT
        arrivals = self.writes.arrivals
        settled = NO_LIMIT
        for tp in running.heads():
            ts = arrivals.settled(tp, now_ms)
            settled = min(settled, WAITING if ts is None else ts)
        return max(quiet_ts, settled)

    def _unheld(self, task_id: TaskId, tp: TopicPartition) -> None:
        now = time.monotonic()
        if now - self._told_full.get(task_id, -FULL_WARNING_S) < FULL_WARNING_S:
            return
        self._told_full[task_id] = now
        logger.warning(
            "task %s goes on without waiting for what is on its way through %s: its buffer of "
            "that partition is full. Records that come after may be late; give the worker more "
            "memory (--memory) or the join a grace",
            task_id,
            f"{tp.topic}[{tp.partition}]",
        )
