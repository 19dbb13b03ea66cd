"""The stores the test driver gives its tasks: RocksDB opened directly in its state directory,
changelogs written to memory, global tables kept as a worker keeps them."""

from __future__ import annotations

from collections.abc import Sequence

from streamjoin.dsl.app import App
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.topology.app_topology import TaskId, store_specs
from streamjoin.state.changelog_topics import store_topic
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.stores.global_store import GlobalStore
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.store_base import LocalStore
from streamjoin.state.stores.versioned_store import VersionedStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.state.task_stores import store_class
from streamjoin.testing.memory_changelog import MemoryChangelogProducer

__all__ = ("GlobalTables", "TaskStores")


class TaskStores:
    """A task's stores (those of each join it runs), opened directly on RocksDB, writing
    changelogs to memory."""

    def __init__(
        self,
        directory: StateDirectory,
        app: App,
        specs: Sequence[JoinSpec],
        task_id: TaskId,
        producer: MemoryChangelogProducer,
        *,
        memory: MemoryBudget,
    ) -> None:
        partition = task_id.partition
        self.by_name: dict[str, LocalStore] = {}
        for store_spec in (s for spec in specs for s in store_specs(spec)):
            kind = store_class(store_spec.kind)
            path = directory.store_dir(str(task_id), store_spec.name)
            store = kind(store_spec, path, memory)
            topic = store_topic(app.app_id, store_spec)
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

    def versioned(self, name: str) -> VersionedStore:
        store = self.by_name[name]
        assert isinstance(store, VersionedStore)
        return store


class GlobalTables:
    """The global tables' stores, one per topic, as a worker holds them."""

    def __init__(self, topics: list[str], directory: StateDirectory, memory: MemoryBudget) -> None:
        self.stores = {topic: GlobalStore(topic, directory, memory) for topic in topics}

    def table(self, topic: str) -> GlobalStore:
        return self.stores[topic]
