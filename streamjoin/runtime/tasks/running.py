"""How fetched records reach the joins and key_bys (members) of one running task, and which of
its input offsets are processed.

A task of one member lets that member buffer and order its own input: the compiled per-record
path, untouched. A task of several members (joins and key_bys reading a common topic) orders its
input once, in one queue over every partition it reads, and hands each record to every member
that reads its topic before it takes the next (Kafka Streams' PartitionGroup). So its members
are at the same offset of a shared partition at every moment: a commit never leaves one of them
ahead of the committed offset, and nothing is processed twice after a hand-off, which
exactly-once needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from streamjoin.assignment.model import TopicPartition
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import Repartition
from streamjoin.runtime.joins.records import SIDES, Side
from streamjoin.runtime.output.sink import RecordSink
from streamjoin.runtime.tasks.admission import wall_clock_ms
from streamjoin.runtime.tasks.in_flight import InFlightWrites
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.ordering import NO_LIMIT, TimestampOrderedInputs
from streamjoin.runtime.tasks.repartition import RepartitionTask
from streamjoin.runtime.topology.app_topology import (
    GlobalTables,
    Member,
    StoreLookup,
    TaskId,
    build_processor,
    member_inputs,
)

__all__ = ("MemberTask", "RunningTask", "member_task", "running_task", "time_sorted_topics")

MemberTask = JoinTask | RepartitionTask
PartitionLag = Callable[[TopicPartition], int | None]


class RunningTask(Protocol):
    members: tuple[MemberTask, ...]

    def add(self, tp: TopicPartition, records: list[Any]) -> None: ...

    def process(self, now_ms: float, lag: PartitionLag, budget: int, limit: int = NO_LIMIT) -> int:
        """Process up to `budget` buffered records, none stamped later than `limit`; returns
        how many."""
        ...

    def next_timestamp(self, now_ms: float, lag: PartitionLag) -> int:
        """The timestamp of the record it would process next; WAITING while it waits for an
        input, NO_LIMIT with nothing to do (`TimestampOrderedInputs.next_timestamp`)."""
        ...

    def positions(self) -> dict[TopicPartition, int]:
        """Next offset to consume per input partition the task has started on."""
        ...

    def heads(self) -> dict[TopicPartition, Any]:
        """The next buffered record of each input partition that has one."""
        ...

    def buffered_by_input(self) -> dict[TopicPartition, int]:
        """Records buffered per input partition."""
        ...

    def buffered(self) -> int: ...


class _SoleMember:
    """A task of one join (or key_by): its member buffers and orders its sides itself."""

    def __init__(self, inputs: tuple[TopicPartition, ...], member: MemberTask) -> None:
        self.members: tuple[MemberTask, ...] = (member,)
        self._member = member
        self._inputs = inputs
        self._side_of = {tp: side for side, tp in zip(SIDES, inputs, strict=False)}

    def add(self, tp: TopicPartition, records: list[Any]) -> None:
        self._member.add(self._side_of[tp], records)

    def process(self, now_ms: float, lag: PartitionLag, budget: int, limit: int = NO_LIMIT) -> int:
        inputs = self._inputs
        return self._member.process(now_ms, lambda side: lag(inputs[side]), budget, limit)

    def next_timestamp(self, now_ms: float, lag: PartitionLag) -> int:
        inputs = self._inputs
        return self._member.next_timestamp(now_ms, lambda side: lag(inputs[side]))

    def positions(self) -> dict[TopicPartition, int]:
        return {self._inputs[side]: offset for side, offset in self._member.positions().items()}

    def heads(self) -> dict[TopicPartition, Any]:
        return {self._inputs[side]: record for side, record in self._member.heads().items()}

    def buffered_by_input(self) -> dict[TopicPartition, int]:
        return {tp: self._member.buffered_for(side) for tp, side in self._side_of.items()}

    def buffered(self) -> int:
        return self._member.buffered()


class _SharedQueue:
    """A task of several members: one timestamp-ordered queue over its input partitions, each
    record handed to every member reading its topic, in turn."""

    def __init__(
        self,
        inputs: tuple[TopicPartition, ...],
        members: Iterable[tuple[MemberTask, tuple[TopicPartition, ...]]],
        max_idle_ms: int,
        time_sorted: frozenset[str],
    ) -> None:
        self._inputs = inputs
        self._index = {tp: i for i, tp in enumerate(inputs)}
        self._queue: TimestampOrderedInputs[Any] = TimestampOrderedInputs(
            len(inputs),
            max_idle_ms,
            frozenset(i for i, tp in enumerate(inputs) if tp.topic in time_sorted),
        )
        self._readers: list[list[tuple[MemberTask, Side]]] = [[] for _ in inputs]
        tasks = []
        for task, read in members:
            tasks.append(task)
            for side, tp in zip(SIDES, read, strict=False):
                self._readers[self._index[tp]].append((task, side))
        self.members = tuple(tasks)
        self._positions: dict[TopicPartition, int] = {}

    def add(self, tp: TopicPartition, records: list[Any]) -> None:
        self._queue.add(self._index[tp], records)

    def process(self, now_ms: float, lag: PartitionLag, budget: int, limit: int = NO_LIMIT) -> int:
        inputs, readers, take = self._inputs, self._readers, self._queue.next
        wall_ms = wall_clock_ms()

        def lag_of(index: int) -> int | None:
            return lag(inputs[index])

        done = 0
        while done < budget:
            picked = take(now_ms, lag_of, limit)
            if picked is None:
                break
            index, record = picked
            for member, side in readers[index]:
                member.accept(side, record, wall_ms)
            self._positions[inputs[index]] = record.offset + 1
            done += 1
        return done

    def next_timestamp(self, now_ms: float, lag: PartitionLag) -> int:
        inputs = self._inputs
        return self._queue.next_timestamp(now_ms, lambda index: lag(inputs[index]))

    def positions(self) -> dict[TopicPartition, int]:
        positions = dict(self._positions)
        for index, position in self._queue.sorted_positions().items():
            positions[self._inputs[index]] = position
        return positions

    def heads(self) -> dict[TopicPartition, Any]:
        heads = self._queue.heads()
        return {tp: heads[i] for i, tp in enumerate(self._inputs) if heads[i] is not None}

    def buffered_by_input(self) -> dict[TopicPartition, int]:
        return {tp: self._queue.buffered_for(i) for tp, i in self._index.items()}

    def buffered(self) -> int:
        return self._queue.buffered()


def running_task(
    task_id: TaskId,
    inputs: tuple[TopicPartition, ...],
    members: Iterable[tuple[Member, MemberTask]],
    max_idle_ms: int,
) -> RunningTask:
    """The task's record path over its `inputs` (every partition it reads, each once); an input
    its joins read in timestamp order (see `time_sorted_topics`) is read so by the task."""
    partition = task_id.partition
    placed = [
        (task, tuple(TopicPartition(t, partition) for t in member_inputs(member)))
        for member, task in members
    ]
    if len(placed) == 1:
        [(task, read)] = placed
        return _SoleMember(read, task)
    time_sorted = frozenset(
        read[side].topic
        for task, read in placed
        if isinstance(task, JoinTask)
        for side in task.time_sorted
    )
    return _SharedQueue(inputs, placed, max_idle_ms, time_sorted)


def time_sorted_topics(app: App) -> frozenset[str]:
    """The repartition topics a task reads in timestamp order: several workers' key_by tasks
    write each, every one in time order, interleaved as they arrive. Not under exactly-once,
    where what a commit says must be a prefix of each partition (a record processed ahead of
    an older offset would be processed again after a failure)."""
    if app.settings.processing_guarantee == "exactly_once":
        return frozenset()
    return frozenset(r.topic.name for r in app.repartitions)


def member_task(
    member: Member,
    task_id: TaskId,
    *,
    app: App,
    state: StoreLookup | None,
    sink: RecordSink,
    global_tables: GlobalTables | None,
    writes: InFlightWrites | None = None,
) -> MemberTask:
    """The task that runs one join or key_by of `task_id` (`writes`: see RepartitionTask)."""
    app_id, settings = app.app_id, app.settings
    on_error = settings.on_error
    if isinstance(member, Repartition):
        return RepartitionTask(app_id, member, task_id, sink, on_error=on_error, writes=writes)
    if member.is_global:
        processor = build_processor(member, None, sink, global_tables)
    else:
        processor = build_processor(member, state, sink)
    sorted_topics = time_sorted_topics(app)
    sources = {r.topic.name: r.source.name for r in app.repartitions}
    return JoinTask(
        app_id,
        member,
        task_id,
        processor,
        sink,
        on_error=on_error,
        max_idle_ms=settings.max_task_idle_ms,
        max_future_ms=settings.max_future_ms,
        max_record_bytes=settings.max_record_bytes,
        time_sorted=frozenset(
            side
            for side, topic in zip(SIDES, member.input_topics, strict=False)
            if topic in sorted_topics
        ),
        rekeyed={i: sources[t] for i, t in enumerate(member.input_topics) if t in sources},
    )
