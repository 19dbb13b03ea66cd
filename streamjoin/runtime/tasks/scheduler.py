"""Which of the worker's running tasks processes what, each round of its loop.

- The tasks of a sub-topology that writes a repartition topic (a key_by's) take their records
  in one time order across the worker, as one queue would: a repartition partition that
  several of them fill in turn would otherwise run backwards in time by a slice of each
  (`_in_time_order`). Like a join's sides, they wait for an input with records on the broker.
- A task reading a repartition topic processes nothing stamped later than what may still be on
  its way to it (upstream.py).
- Every task gets a slice of the round's budget in turn, so one call never keeps the event loop
  (heartbeats, fetches) waiting for long.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.lateness import moment
from streamjoin.runtime.tasks.ordering import NO_LIMIT, WAITING
from streamjoin.runtime.tasks.remote_upstream import RemoteUpstream
from streamjoin.runtime.tasks.running import PartitionLag, RunningTask
from streamjoin.runtime.tasks.upstream import UpstreamGate, in_flight_writes
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId

__all__ = ("HELD_WARNING_S", "Scheduler")

logger = logging.getLogger(__name__)

SLICE = 200
"""Records a task processes at most before the next task's turn."""
MIN_TURN = 8
"""Records a round lets each running task process at least, whatever the budget: a round's
costs per task (its turn, the buffer counts) are then spread over as many records with 512 tasks
as with 8. With a fixed budget of 500, each of 512 tasks got one record per turn, and the
scheduler's CPU per record grew 4x from 8 to 512 tasks."""
HELD_WARNING_S = 60.0
"""A join held back this long by its upstream says so (then once per this long)."""


class Scheduler:
    def __init__(
        self, topology: AppTopology, sink: object = None, kafka: KafkaConnection | None = None
    ) -> None:
        """With a producer `sink` and `kafka`, it learns where the worker's key_by records land
        (the sink's acknowledgements) and where other workers' key_by tasks stand
        (remote_upstream.py); without, the worker is taken to run every key_by task."""
        self.writes = in_flight_writes(topology)
        self.gate = UpstreamGate(topology, self.writes)
        self._remote: RemoteUpstream | None = None
        if self.gate.hops and isinstance(sink, ProducerSink) and kafka is not None:
            sink.watcher = self.writes
            writers = self.gate.writers
            self._remote = RemoteUpstream(
                kafka,
                topology.app.app_id,
                {name: topology.inputs(name) for name in writers},
                {name: topology.partitions[name] for name in writers},
                self.writes.fetch_positions,
                read_committed=topology.app.settings.processing_guarantee == "exactly_once",
            )
            self.gate.remote = self._remote
        self._held_since: dict[TaskId, float] = {}
        self._held_told: dict[TaskId, float] = {}
        self.held_s = 0.0
        """Seconds joins spent held back by their upstream, summed over tasks (a metric)."""
        self._last_round: float | None = None
        self._lateness_at = 0.0

    async def close(self) -> None:
        if self._remote is not None:
            await self._remote.close()

    def process(
        self,
        active: Mapping[TaskId, RunningTask | None],
        now_ms: float,
        lag: PartitionLag,
        budget: int,
        full: AbstractSet[TopicPartition] = frozenset(),
    ) -> int:
        """Process up to `budget` records of the running tasks in `active` (None: restoring),
        or `MIN_TURN` per running task if that is more; returns how many. `full`: input
        partitions paused for their full buffers."""
        limits = self.gate.limits(active, now_ms, lag, full)
        groups: dict[str, list[tuple[TaskId, RunningTask]]] = {}
        units: list[list[tuple[TaskId, RunningTask]]] = []
        for task_id, running in active.items():
            if running is None:
                continue
            if task_id.subtopology in self.gate.writers:
                group = groups.get(task_id.subtopology)
                if group is None:
                    group = groups[task_id.subtopology] = []
                    units.append(group)
                group.append((task_id, running))
            elif running.buffered():  # a writer waits on its empty inputs; this one has no turn
                units.append([(task_id, running)])
        budget = max(budget, MIN_TURN * sum(len(unit) for unit in units))
        done = 0
        counts: dict[TaskId, int] = {}
        while units and done < budget:
            share = max(1, (budget - done) // sum(len(u) for u in units))
            still_busy = []
            for unit in units:
                if len(unit) == 1:
                    task_id, running = unit[0]
                    limit = limits.get(task_id, NO_LIMIT) if limits else NO_LIMIT
                    count = running.process(now_ms, lag, min(share, SLICE), limit)
                    if limits:  # for _note_held (hashing a TaskId per turn cost 6% at 512 tasks)
                        counts[task_id] = counts.get(task_id, 0) + count
                else:
                    count = _in_time_order(unit, now_ms, lag, share * len(unit), limits)
                done += count
                if count:
                    still_busy.append(unit)
            units = still_busy
        self._note_held(active, limits, counts, now_ms, lag)
        self._sum_up_lateness(active)
        return done

    def _sum_up_lateness(self, active: Mapping[TaskId, RunningTask | None]) -> None:
        """Once a second, let each join task sum up its late records if a minute has passed
        (lateness.py), also when no record of it comes any more."""
        now = time.monotonic()
        if now - self._lateness_at < 1.0:
            return
        self._lateness_at = now
        for running in active.values():
            for member in running.members if running is not None else ():
                if isinstance(member, JoinTask):
                    member.lateness.tick()

    def _note_held(
        self,
        active: Mapping[TaskId, RunningTask | None],
        limits: Mapping[TaskId, int],
        counts: Mapping[TaskId, int],
        now_ms: float,
        lag: PartitionLag,
    ) -> None:
        """Count the time joins wait for their upstream, and say so when one waits long."""
        now = time.monotonic()
        elapsed = 0.0 if self._last_round is None else now - self._last_round
        self._last_round = now
        for task_id, limit in limits.items():
            running = active.get(task_id)
            held = (
                running is not None
                and not counts.get(task_id)
                and running.buffered() > 0
                and running.next_timestamp(now_ms, lag) > limit
            )
            if not held:
                self._held_since.pop(task_id, None)
                continue
            self.held_s += elapsed
            since = self._held_since.setdefault(task_id, now)
            told = self._held_told.get(task_id, 0.0)
            if now - since >= HELD_WARNING_S and now - told >= HELD_WARNING_S:
                self._held_told[task_id] = now
                logger.warning(
                    "task %s has waited %.0f s for records that may come before its next one "
                    "(stamped before %s): on their way through a repartition topic, or not yet "
                    "re-keyed by key_by tasks here or on other workers (see docs/streams.md, "
                    "'A backlog through a key_by')",
                    task_id,
                    now - since,
                    "any it holds" if limit == WAITING else moment(limit),
                )


def _in_time_order(
    unit: list[tuple[TaskId, RunningTask]],
    now_ms: float,
    lag: PartitionLag,
    budget: int,
    limits: Mapping[TaskId, int],
) -> int:
    """Process the tasks of one writing sub-topology as one queue in timestamp order: the task
    with the oldest next record goes on until another's is older. Nothing while one of them
    waits for its input."""
    heap = [(running.next_timestamp(now_ms, lag), i) for i, (_, running) in enumerate(unit)]
    heapq.heapify(heap)
    done = 0
    while done < budget:
        ts, i = heap[0]
        if ts in (WAITING, NO_LIMIT):
            break
        others = [heap[k][0] for k in (1, 2) if k < len(heap)]
        task_id, running = unit[i]
        limit = min(min(others, default=NO_LIMIT), limits.get(task_id, NO_LIMIT))
        count = running.process(now_ms, lag, min(budget - done, SLICE), limit)
        if not count:
            break
        done += count
        heapq.heapreplace(heap, (running.next_timestamp(now_ms, lag), i))
    return done
