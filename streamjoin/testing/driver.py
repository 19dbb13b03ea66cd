"""Run an app's joins without a broker, as Kafka Streams' TopologyTestDriver does.

    with TestDriver(app) as driver:
        driver.pipe("impressions", Impression(...), key="a1", timestamp=1_000)
        driver.pipe("clicks", Click(...), key="a1", timestamp=1_500)
        assert driver.read_output("attributed-clicks")[0].value == {...}

Records go through the worker's own task code (its tasks and their record queues, ordering,
join processors, RocksDB stores in a temporary state directory, joiner, serdes, dead letters);
only Kafka is left out. Each piped record is processed at once, in the order piped, as Kafka
Streams' TopologyTestDriver does: every input counts as caught up. With `max_task_idle_ms` above
0 a task holds records while one of its inputs has none buffered, until that input gets one or
the driver's wall clock (`advance_wall_clock`, starting at 0) has moved on by `max_task_idle_ms`;
then it processes them in timestamp order, as a worker does. Joins reading a common topic run
in one task with one queue, as in a worker. Stream time moves with record timestamps or with
`advance_stream_time`. The whole topology runs: a record piped into a topic a `key_by` reads is
re-keyed into its repartition topic and joined from there, and a join's output that another join
reads is joined again, before `pipe` returns (all readable with `read_output`). A record piped
into a global table's topic updates the table at once.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.topics import Topic
from streamjoin.dsl.topology import Topology, compile_topology
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.output.dead_letters import dead_letter_topic
from streamjoin.runtime.output.sink import OutgoingRecord
from streamjoin.runtime.process.memory import memory_budget
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.running import RunningTask, member_task, running_task
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.state.layout import StateDirectory
from streamjoin.state.stores.global_store import GlobalStore
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.testing.memory_changelog import MemoryChangelogProducer
from streamjoin.testing.stores import GlobalTables, TaskStores

__all__ = ("OutputRecord", "TestDriver")


@dataclass(frozen=True, slots=True)
class OutputRecord:
    topic: str
    key: Any
    value: Any
    timestamp: int
    headers: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _InputRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    partition: int = 0


class _ListSink:
    def __init__(self) -> None:
        self.records: defaultdict[str, list[OutgoingRecord]] = defaultdict(list)

    def send(self, record: OutgoingRecord) -> None:
        self.records[record.topic].append(record)


class TestDriver:
    """Drives an `App`'s topology in-process. `partitions` sets topic partition counts (default:
    the topic's declared count, else 1; repartition topics and join outputs as the worker
    would create them). The app is validated as the worker does (cycles, co-partitioning)."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        app: App,
        *,
        state_dir: Path | str | None = None,
        partitions: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if state_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="streamjoin-driver-")
            state_dir = self._tmp.name
        self._directory = StateDirectory(state_dir, app.app_id)
        self.topology: Topology = compile_topology(app, self._existing(partitions or {}))
        self._sink = _ListSink()
        self._read: defaultdict[str, int] = defaultdict(int)
        self._forwarded: defaultdict[str, int] = defaultdict(int)
        self._offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self._tasks = AppTopology(app, {n: c or 1 for n, c in self.topology.tasks.items()})
        """The worker's sub-topologies: joins reading a common topic share one task."""
        self._running: dict[TaskId, RunningTask] = {}
        self._stores: dict[TaskId, TaskStores] = {}
        self._readers: defaultdict[str, list[str]] = defaultdict(list)
        """Topic -> the sub-topologies whose tasks read it."""
        for name in self._tasks.names:
            for topic in self._tasks.inputs(name):
                self._readers[topic].append(name)
        self._wall_clock_ms = 0
        written = [s.into.name for s in app.joins] + [r.topic.name for r in app.repartitions]
        written += list(app.foreign_key_topics)
        self._internal = [t for t in written if t in self._readers]
        """Topics the app both writes and reads: what lands there is processed in turn."""
        self.changelogs = MemoryChangelogProducer()
        self.memory = memory_budget(app.settings)
        """Shared by the stores of every task, as in a worker."""
        global_topics = sorted({s.right.name for s in app.joins if s.is_global})
        self._globals = GlobalTables(global_topics, self._directory, self.memory)

    def _existing(self, partitions: Mapping[str, int]) -> dict[str, int]:
        """Partition counts of the topics the app reads from outside, as if they existed."""
        app = self.app
        written = {s.into.name for s in app.joins} | {r.topic.name for r in app.repartitions}
        sources = [t for s in app.joins for t in (s.left, s.right) if t.name not in written]
        sources += [r.source for r in app.repartitions if r.source.name not in written]
        existing = {t.name: partitions.get(t.name) or t.partitions or 1 for t in sources}
        existing.update({t: n for t, n in partitions.items() if t not in existing})
        return existing

    def _topic(self, name: str) -> Topic:
        for spec in self.app.joins:
            for topic in (spec.left, spec.right, spec.into):
                if topic.name == name:
                    return topic
        for repartition in self.app.repartitions:
            for topic in (repartition.source, repartition.topic):
                if topic.name == name:
                    return topic
        raise ConfigurationError(f"no join of app {self.app.app_id!r} reads or writes {name!r}")

    def partition_count(self, topic: str) -> int:
        self._topic(topic)
        return self.topology.partitions.get(topic) or 1

    def _task(self, subtopology: str, partition: int) -> RunningTask:
        """The running task of `partition` of a sub-topology, made on first use."""
        task_id = TaskId(subtopology, partition)
        running = self._running.get(task_id)
        if running is None:
            members = self._tasks.members(subtopology)
            specs = [m for m in members if isinstance(m, JoinSpec) and not m.is_global]
            stores = TaskStores(
                self._directory, self.app, specs, task_id, self.changelogs, memory=self.memory
            )
            self._stores[task_id] = stores
            built = [
                (
                    member,
                    member_task(
                        member,
                        task_id,
                        app=self.app,
                        state=stores,
                        sink=self._sink,
                        global_tables=self._globals,
                    ),
                )
                for member in members
            ]
            inputs = tuple(TopicPartition(t, partition) for t in self._tasks.inputs(subtopology))
            running = running_task(task_id, inputs, built, self.app.settings.max_task_idle_ms)
            self._running[task_id] = running
        return running

    def _join_tasks(self) -> list[JoinTask]:
        return [m for r in self._running.values() for m in r.members if isinstance(m, JoinTask)]

    def pipe(
        self,
        topic: str,
        value: Any,
        *,
        key: Any = None,
        timestamp: int,
        partition: int | None = None,
    ) -> None:
        """Serialise `key` and `value` with the topic's serdes and process the record."""
        declared = self._topic(topic)
        raw_key = None if key is None else declared.key_serde.serialize(key)
        raw_value = None if value is None else declared.value_serde.serialize(value)
        self.pipe_raw(topic, raw_value, key=raw_key, timestamp=timestamp, partition=partition)

    def pipe_raw(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        timestamp: int,
        partition: int | None = None,
    ) -> None:
        """Process a record given as bytes (to test what undecodable input does)."""
        self._deliver(topic, value, key, timestamp, partition)
        self._forward()

    def _deliver(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        timestamp: int,
        partition: int | None,
    ) -> None:
        count = self.partition_count(topic)
        if partition is None:
            partition = 0 if key is None else partition_for_key(key, count)
        offset = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] = offset + 1
        record = _InputRecord(offset, timestamp, key, value, partition)
        table = self._globals.stores.get(topic)
        if table is not None:
            table.apply(partition, [record])
        for subtopology in self._readers.get(topic, ()):
            task = self._task(subtopology, partition)
            task.add(TopicPartition(topic, partition), [record])
            self._process(task)

    def _process(self, task: RunningTask) -> None:
        """Everything the task may process now: every input is caught up (lag 0)."""
        while task.process(self._wall_clock_ms, lambda _tp: 0, 1 << 30):
            pass

    def _forward(self) -> None:
        """Process what tasks wrote to topics the app reads (repartition topics, join outputs
        read by another join), until nothing new is there."""
        moved = True
        while moved:
            moved = False
            for topic in self._internal:
                records = self._sink.records[topic]
                while self._forwarded[topic] < len(records):
                    sent = records[self._forwarded[topic]]
                    self._forwarded[topic] += 1
                    self._deliver(topic, sent.value, sent.key, sent.timestamp, sent.partition)
                    moved = True

    def commit(self) -> None:
        """Flush every task's stores as the worker's commit does: writes move from memory to
        RocksDB and key-value stores send their changelog records (one per key written since
        the last commit). Without it, everything stays in the stores' unflushed layers."""
        for stores in self._stores.values():
            for store in stores.by_name.values():
                store.begin_flush()
                store.finish_flush()  # the in-memory changelog confirms at once

    def advance_stream_time(self, timestamp: int) -> None:
        """Move every task's stream time to `timestamp`, emitting the non-matches it closes."""
        for task in self._join_tasks():
            task.advance_stream_time(timestamp)
        self._forward()

    def advance_wall_clock(self, millis: int) -> None:
        """Move the driver's wall clock on (as TopologyTestDriver.advanceWallClockTime): a task
        holding records for `max_task_idle_ms` processes them once it has passed."""
        self._wall_clock_ms += millis
        for task in list(self._running.values()):
            self._process(task)
        self._forward()

    def read_output(self, topic: str) -> list[OutputRecord]:
        """Records written to `topic` since the last read, decoded with its serdes."""
        records = self._sink.records[topic]
        start, self._read[topic] = self._read[topic], len(records)
        declared = self._topic(topic)
        return [
            OutputRecord(
                topic,
                None if r.key is None else declared.key_serde.deserialize(r.key),
                None if r.value is None else declared.value_serde.deserialize(r.value),
                r.timestamp,
                dict(r.headers),
            )
            for r in records[start:]
        ]

    def dead_letters(self) -> list[OutgoingRecord]:
        """Every record sent to the dead-letter topic, as sent."""
        return list(self._sink.records[dead_letter_topic(self.app.app_id)])

    def counters(self, join: str) -> JoinCounters:
        self.app.get_join(join)
        total = JoinCounters()
        for task in self._join_tasks():
            if task.spec.name == join:
                total.add(task.processor.counters)
        return total

    def _store(self, join: str, store: str, partition: int) -> LocalStore:
        self.app.get_join(join)
        subtopology = self._tasks.subtopology_of(join)
        self._task(subtopology, partition)
        stores = self._stores[TaskId(subtopology, partition)].by_name
        name = f"{join}-{store}"
        if name not in stores:
            known = ", ".join(sorted(n.removeprefix(f"{join}-") for n in stores))
            raise ConfigurationError(f"join {join!r} has no store {store!r} (stores: {known})")
        return stores[name]

    def window_store(self, join: str, side: str, partition: int = 0) -> WindowStore:
        """A stream-stream join's window store of side "left" or "right", to `fetch` from."""
        store = self._store(join, side, partition)
        assert isinstance(store, WindowStore)
        return store

    def key_value_store(self, join: str, name: str, partition: int = 0) -> KeyValueStore:
        """A join's key-value store: "table" (stream-table), "left"/"right" (table-table) or
        "pending" (left/outer stream-stream)."""
        store = self._store(join, name, partition)
        assert isinstance(store, KeyValueStore)
        return store

    def global_table(self, topic: str) -> GlobalStore:
        """The store of the global table read from `topic` (`lookup(key)` its stored value)."""
        try:
            return self._globals.stores[topic]
        except KeyError:
            raise ConfigurationError(
                f"app {self.app.app_id!r} has no global table {topic!r}"
            ) from None

    def versioned_store(self, join: str, partition: int = 0) -> VersionedStore:
        """A stream-table join's versioned table store, to read `versions` from."""
        store = self._store(join, "table", partition)
        assert isinstance(store, VersionedStore)
        return store

    def close(self) -> None:
        for table in self._globals.stores.values():
            table.close()
        self._globals.stores.clear()
        for stores in self._stores.values():
            for store in stores.by_name.values():
                store.close()
        self._stores.clear()
        self._running.clear()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> TestDriver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
