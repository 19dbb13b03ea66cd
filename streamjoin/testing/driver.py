"""Run an app's joins without a broker, as Kafka Streams' TopologyTestDriver does.

    with TestDriver(app) as driver:
        driver.pipe("impressions", Impression(...), key="a1", timestamp=1_000)
        driver.pipe("clicks", Click(...), key="a1", timestamp=1_500)
        assert driver.read_output("attributed-clicks")[0].value == {...}

Records go through the worker's own task code (ordering, join processors, RocksDB stores in a
temporary state directory, joiner, serdes, dead letters); only Kafka is left out. Each piped
record is processed at once, in the order piped; stream time moves with record timestamps or
with `advance_stream_time`.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.topics import Topic
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.dead_letters import dead_letter_topic
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.sink import OutgoingRecord
from streamjoin.runtime.task import JoinTask
from streamjoin.runtime.topology import TaskId, build_processor, store_specs
from streamjoin.runtime.worker_memory import memory_budget
from streamjoin.state.changelog_topics import changelog_topic
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.kv_store import KeyValueStore
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.specs import StoreKind
from streamjoin.state.store_base import LocalStore
from streamjoin.state.window_store import WindowStore
from streamjoin.testing.memory_changelog import MemoryChangelogProducer

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


class _Stores:
    """A task's stores, opened directly on RocksDB, writing changelogs to memory."""

    def __init__(
        self,
        directory: StateDirectory,
        app: App,
        spec: JoinSpec,
        task_id: TaskId,
        producer: MemoryChangelogProducer,
        *,
        memory: MemoryBudget,
    ) -> None:
        partition = task_id.partition
        self.by_name: dict[str, LocalStore] = {}
        for store_spec in store_specs(spec):
            kind = WindowStore if store_spec.kind is StoreKind.WINDOW else KeyValueStore
            path = directory.store_dir(str(task_id), store_spec.name)
            store = kind(store_spec, path, memory)
            topic = changelog_topic(app.app_id, store_spec.name)
            store.attach_writer(
                ChangelogWriter(producer.for_partition(topic, partition), topic, partition)
            )
            self.by_name[store_spec.name] = store

    def window(self, name: str) -> WindowStore:
        store = self.by_name[name]
        assert isinstance(store, WindowStore)
        return store

    def kv(self, name: str) -> KeyValueStore:
        store = self.by_name[name]
        assert isinstance(store, KeyValueStore)
        return store


class _ListSink:
    def __init__(self) -> None:
        self.records: defaultdict[str, list[OutgoingRecord]] = defaultdict(list)

    def send(self, record: OutgoingRecord) -> None:
        self.records[record.topic].append(record)


class TestDriver:
    """Drives an `App`'s joins in-process. `partitions` sets topic partition counts (default:
    the topic's declared count, else 1)."""

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
        self._partitions = dict(partitions or {})
        self._sink = _ListSink()
        self._read: defaultdict[str, int] = defaultdict(int)
        self._offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self._tasks: dict[TaskId, JoinTask] = {}
        self._stores: dict[TaskId, _Stores] = {}
        self.changelogs = MemoryChangelogProducer()
        self.memory = memory_budget(app.settings)
        """Shared by the stores of every task, as in a worker."""

    def _topic(self, name: str) -> Topic:
        for spec in self.app.joins:
            for topic in (spec.left, spec.right, spec.into):
                if topic.name == name:
                    return topic
        raise ConfigurationError(f"no join of app {self.app.app_id!r} reads or writes {name!r}")

    def partition_count(self, topic: str) -> int:
        return self._partitions.get(topic) or self._topic(topic).partitions or 1

    def _task(self, spec: JoinSpec, partition: int) -> JoinTask:
        task_id = TaskId(spec.name, partition)
        task = self._tasks.get(task_id)
        if task is None:
            stores = _Stores(
                self._directory, self.app, spec, task_id, self.changelogs, memory=self.memory
            )
            self._stores[task_id] = stores
            task = JoinTask(
                self.app.app_id,
                spec,
                task_id,
                build_processor(spec, stores),
                self._sink,
                on_error=self.app.settings.on_error,
            )
            self._tasks[task_id] = task
        return task

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
        count = self.partition_count(topic)
        if partition is None:
            partition = 0 if key is None else partition_for_key(key, count)
        offset = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] = offset + 1
        record = _InputRecord(offset, timestamp, key, value)
        for spec in self.app.joins:
            if topic in spec.input_topics:
                task = self._task(spec, partition)
                task.add(task.side_of(topic), [record])
                task.process(0, lambda _side: 0)

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
        for task in self._tasks.values():
            task.advance_stream_time(timestamp)

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
        total = JoinCounters()
        for task_id, task in self._tasks.items():
            if task_id.join == join:
                total.add(task.processor.counters)
        return total

    def _store(self, join: str, store: str, partition: int) -> LocalStore:
        self._task(self.app.get_join(join), partition)
        stores = self._stores[TaskId(join, partition)].by_name
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
        """A join's key-value store: "table" (stream-table) or "pending" (left/outer)."""
        store = self._store(join, name, partition)
        assert isinstance(store, KeyValueStore)
        return store

    def close(self) -> None:
        for stores in self._stores.values():
            for store in stores.by_name.values():
                store.close()
        self._stores.clear()
        self._tasks.clear()
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
