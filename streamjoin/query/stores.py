"""The stores an app answers queries on, by the name users give them, and how each kind reads
one key from a task's local copy.

A stream-table join's table is addressed by its topic's name (`/stores/users/...` for
`joins.table("users")`), a stream-stream join's window stores by the names `describe` shows
("<join>-left", "<join>-right"). A new kind of store plugs in with `register_kind(name, reader)`
and a `QueryableStore` of that kind from whatever declares it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from streamjoin.dsl.serdes import BytesSerde, Serde, SerdeError, StrSerde, is_faust_record
from streamjoin.dsl.spec import JoinSpec
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.joins.records import unpack_stored
from streamjoin.runtime.topology import TaskId
from streamjoin.state.table_values import unpack_table_value
from streamjoin.state.task_state import TaskState

__all__ = (
    "BadKey",
    "QueryableStore",
    "Reader",
    "Scanner",
    "TimeRange",
    "key_bytes",
    "queryable_stores",
    "register_kind",
    "task_of",
    "to_json",
)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Window stores: records with start <= timestamp <= end (ms)."""

    start: int
    end: int


Reader = Callable[["QueryableStore", TaskState, bytes, TimeRange], Any]
"""Reads one key from a task's copy of a store: its value as JSON-ready data, None if absent."""
Scanner = Callable[["QueryableStore", TaskState, bytes | None, bytes | None, int], list[Any]]
"""Reads at most `limit` entries start <= key < end of an ordered store, in key order, as
`{"key", "value"}` JSON-ready data."""

_READERS: dict[str, Reader] = {}
_SCANNERS: dict[str, Scanner] = {}


def register_kind(kind: str, reader: Reader, scanner: Scanner | None = None) -> None:
    """Make stores of `kind` queryable by key with `reader`, and by key range with `scanner`
    (stores ordered by key)."""
    _READERS[kind] = reader
    if scanner is not None:
        _SCANNERS[kind] = scanner


class BadKey(ValueError):
    """The key given cannot be encoded with the store's key type."""


@dataclass(frozen=True, slots=True)
class QueryableStore:
    name: str
    """The name users query it by."""
    kind: str
    subtopology: str
    """Its tasks' sub-topology (a join's name): the key's partition picks the task."""
    local_name: str
    """The store's name inside a task (and in its changelog topic)."""
    key_serde: Serde
    value_serde: Serde

    @property
    def ordered(self) -> bool:
        return self.kind in _SCANNERS

    def read(self, task: TaskState, key: bytes, window: TimeRange) -> Any:
        return _READERS[self.kind](self, task, key, window)

    def scan(
        self, task: TaskState, start: bytes | None, end: bytes | None, limit: int
    ) -> list[Any]:
        return _SCANNERS[self.kind](self, task, start, end, limit)


def to_json(value: Any) -> Any:
    """A decoded value as JSON-ready data (dataclasses, faust Records, bytes as base64)."""

    def other(item: Any) -> Any:
        if is_faust_record(type(item)):
            return item.asdict()
        raise TypeError(f"{type(item).__name__} is not JSON serialisable")

    return msgspec.to_builtins(value, enc_hook=other)


def key_bytes(store: QueryableStore, text: str) -> bytes:
    """The key as the store holds it: the text itself for str and bytes keys; else the text
    decoded with the key's serde (JSON, a dataclass's JSON object) and encoded again, so it is
    in the serde's own form (a text that is not JSON is a JSON string key)."""
    serde = store.key_serde
    if isinstance(serde, StrSerde | BytesSerde):
        return text.encode()
    try:
        value = serde.deserialize(text.encode())
    except SerdeError:
        value = text
    try:
        return serde.serialize(value)
    except (SerdeError, TypeError, ValueError) as exc:
        raise BadKey(f"key {text!r} is not a key of store {store.name!r}: {exc}") from None


def _read_table(store: QueryableStore, task: TaskState, key: bytes, window: TimeRange) -> Any:
    stored = task.kv(store.local_name).get(key)
    if stored is None:
        return None
    return to_json(store.value_serde.deserialize(unpack_table_value(stored)[2]))


def _scan_table(
    store: QueryableStore, task: TaskState, start: bytes | None, end: bytes | None, limit: int
) -> list[Any]:
    entries: list[Any] = []
    for key, stored in task.kv(store.local_name).range(start, end):
        if len(entries) == limit:
            break
        entries.append(
            {
                "key": to_json(store.key_serde.deserialize(key)),
                "value": to_json(store.value_serde.deserialize(unpack_table_value(stored)[2])),
            }
        )
    return entries


def _read_window(store: QueryableStore, task: TaskState, key: bytes, window: TimeRange) -> Any:
    found = task.window(store.local_name).fetch(key, window.start, window.end)
    if not found:
        return None
    return [
        {"timestamp": timestamp, "value": to_json(store.value_serde.deserialize(raw))}
        for timestamp, stored in found
        for raw in (unpack_stored(stored)[1],)
    ]


register_kind("table", _read_table, _scan_table)
register_kind("window", _read_window)


def queryable_stores(joins: Iterable[JoinSpec]) -> Mapping[str, QueryableStore]:
    """Every queryable store of an app's joins, by name: the tables of stream-table and
    table-table joins by their topics' names, the window stores of stream-stream joins by the
    names `describe` shows. (Not yet: versioned tables, foreign-key joins' stores, global
    tables, which every worker holds whole.)"""
    stores: dict[str, QueryableStore] = {}
    for spec in joins:
        if spec.foreign_key is not None or spec.is_global or spec.has_versioned_table:
            continue
        if spec.is_stream_table or spec.is_table_table:
            tables = [("table", spec.right, spec.right_value_serde)]
            if spec.is_table_table:
                tables = [
                    ("left", spec.left, spec.left_value_serde),
                    ("right", spec.right, spec.right_value_serde),
                ]
            for local, topic, serde in tables:
                stores[topic.name] = QueryableStore(
                    topic.name, "table", spec.name, f"{spec.name}-{local}", topic.key_serde, serde
                )
            continue
        for side, topic, serde in (
            ("left", spec.left, spec.left_value_serde),
            ("right", spec.right, spec.right_value_serde),
        ):
            name = f"{spec.name}-{side}"
            stores[name] = QueryableStore(name, "window", spec.name, name, topic.key_serde, serde)
    return stores


def task_of(store: QueryableStore, key: bytes, partitions: int) -> TaskId:
    """The task holding `key`: the partition Kafka's default partitioner gives it."""
    return TaskId(store.subtopology, partition_for_key(key, partitions))
