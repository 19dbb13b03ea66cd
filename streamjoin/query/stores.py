"""The stores an app answers queries on, by the name users give them, and how each kind reads
one key from a task's local copy.

A table is addressed by its topic's name (`/stores/users/...` for `joins.table("users")`): the
table of a stream-table join (versioned or not), both tables of a table-table or foreign-key
join, a global table; a stream-stream join's window stores by the names `describe` shows
("<join>-left", "<join>-right"). A foreign-key join's subscription store is internal (keyed by
foreign key and left key) and not queryable. A new kind of store plugs in with
`register_kind(name, reader)` and a `QueryableStore` of that kind from whatever declares it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from streamjoin.dsl.serdes import BytesSerde, Serde, SerdeError, StrSerde, is_faust_record
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.topics import Table, Topic
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.joins.records import unpack_stored
from streamjoin.runtime.topology.app_topology import StoreLookup, TaskId
from streamjoin.state.stores.global_store import unpack_global
from streamjoin.state.stores.table_values import unpack_table_value

__all__ = (
    "FOREVER_MS",
    "GLOBAL",
    "BadKey",
    "KeyQuery",
    "NotKept",
    "QueryableStore",
    "Reader",
    "Scanner",
    "key_bytes",
    "queryable_stores",
    "register_kind",
    "task_of",
    "to_json",
    "valid_version",
)


FOREVER_MS = 2**62
GLOBAL = "global"
"""The kind of a global table's store: every worker holds it whole and answers it locally."""


@dataclass(frozen=True, slots=True)
class KeyQuery:
    """What a key lookup asks besides the key: window stores, the records with start <=
    timestamp <= end (ms); versioned tables, the value valid at `as_of` (None: the latest)."""

    start: int = 0
    end: int = FOREVER_MS
    as_of: int | None = None


Reader = Callable[["QueryableStore", StoreLookup, bytes, KeyQuery], dict[str, Any] | None]
"""Reads one key from a copy of a store: the answer's fields for it (`value`, as JSON-ready
data, and any the kind adds), None if absent."""
Scanner = Callable[["QueryableStore", StoreLookup, bytes | None, bytes | None, int], list[Any]]
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


class NotKept(LookupError):
    """The store no longer keeps what was asked (a time older than a versioned table's history)."""


@dataclass(frozen=True, slots=True)
class QueryableStore:
    name: str
    """The name users query it by."""
    kind: str
    subtopology: str
    """The sub-topology whose tasks hold it: the key's partition picks the task."""
    local_name: str
    """The store's name inside a task (and in its changelog topic)."""
    key_serde: Serde
    value_serde: Serde

    @property
    def ordered(self) -> bool:
        return self.kind in _SCANNERS

    @property
    def is_global(self) -> bool:
        return self.kind == GLOBAL

    def read(self, copy: StoreLookup, key: bytes, query: KeyQuery) -> dict[str, Any] | None:
        return _READERS[self.kind](self, copy, key, query)

    def scan(
        self, copy: StoreLookup, start: bytes | None, end: bytes | None, limit: int
    ) -> list[Any]:
        return _SCANNERS[self.kind](self, copy, start, end, limit)


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


def _value(store: QueryableStore, raw: bytes) -> Any:
    return to_json(store.value_serde.deserialize(raw))


def _table_fields(store: QueryableStore, stored: bytes) -> dict[str, Any]:
    return {"value": _value(store, unpack_table_value(stored)[2])}


def _global_fields(store: QueryableStore, stored: bytes) -> dict[str, Any]:
    """A global table's value, and the partition of its topic it came from."""
    partition, _, raw = unpack_global(stored)
    return {"value": _value(store, raw), "partition": partition}


def _key_value(fields: Callable[[QueryableStore, bytes], dict[str, Any]]) -> tuple[Reader, Scanner]:
    """Reader and scanner of a key-value store whose stored values `fields` decodes."""

    def read(
        store: QueryableStore, copy: StoreLookup, key: bytes, query: KeyQuery
    ) -> dict[str, Any] | None:
        stored = copy.kv(store.local_name).get(key)
        return None if stored is None else fields(store, stored)

    def scan(
        store: QueryableStore, copy: StoreLookup, start: bytes | None, end: bytes | None, limit: int
    ) -> list[Any]:
        entries: list[Any] = []
        for key, stored in copy.kv(store.local_name).range(start, end):
            if len(entries) == limit:
                break
            entries.append(
                {"key": to_json(store.key_serde.deserialize(key)), **fields(store, stored)}
            )
        return entries

    return read, scan


def _read_versioned(
    store: QueryableStore, copy: StoreLookup, key: bytes, query: KeyQuery
) -> dict[str, Any] | None:
    """The latest value, or the one valid at `as_of`, with when it became valid and when it
    stopped being (None: it still is), as IQv2's VersionedKeyQuery answers a VersionedRecord."""
    table = copy.versioned(store.local_name)
    if query.as_of is not None and table.too_old(query.as_of):
        raise NotKept(
            f"as_of={query.as_of} is older than the {table.history_ms} ms of history store "
            f"{store.name!r} keeps (it goes back to {table.observed_time - table.history_ms})"
        )
    found = valid_version(table.versions(key), query.as_of)
    if found is None:
        return None
    valid_from, stored, valid_to = found
    return {**_table_fields(store, stored), "timestamp": valid_from, "valid_to": valid_to}


def valid_version(
    versions: list[tuple[int, bytes | None]], as_of: int | None
) -> tuple[int, bytes, int | None] | None:
    """Of a key's versions (valid from, value or None: deleted), in time order: the one valid
    at `as_of` (None: the latest) as (valid from, value, valid to or None), None if the key had
    no value then."""
    index = len(versions) - 1
    if as_of is not None:
        while index >= 0 and versions[index][0] > as_of:
            index -= 1
    if index < 0:
        return None
    valid_from, value = versions[index]
    if value is None:
        return None
    valid_to = versions[index + 1][0] if index + 1 < len(versions) else None
    return valid_from, value, valid_to


def _read_window(
    store: QueryableStore, copy: StoreLookup, key: bytes, query: KeyQuery
) -> dict[str, Any] | None:
    found = copy.window(store.local_name).fetch(key, query.start, query.end)
    if not found:
        return None
    records = [
        {"timestamp": timestamp, "value": _value(store, unpack_stored(stored)[1])}
        for timestamp, stored in found
    ]
    return {"value": records}


register_kind("table", *_key_value(_table_fields))
register_kind("versioned", _read_versioned)
register_kind("window", _read_window)
register_kind(GLOBAL, *_key_value(_global_fields))


def _table_store(subtopology: str, local: str, table: Table, serde: Serde) -> QueryableStore:
    kind = "versioned" if table.versioned else "table"
    return QueryableStore(table.name, kind, subtopology, local, table.key_serde, serde)


def queryable_stores(
    joins: Iterable[JoinSpec], subtopology_of: Callable[[str], str] = str
) -> Mapping[str, QueryableStore]:
    """Every queryable store of an app's joins, by name: tables by their topics' names (the
    table of a stream-table join, both tables of a table-table or foreign-key join, global
    tables), the window stores of stream-stream joins by the names `describe` shows.
    `subtopology_of` names the sub-topology running a join (its own name unless it shares a
    source topic with other joins)."""
    stores: dict[str, QueryableStore] = {}
    for spec in joins:
        subtopology = subtopology_of(spec.name)
        fk = spec.foreign_key
        if fk is not None:
            # Each half keeps its table ("<join>-left", "<join>-fk-right") by the table's key.
            if fk.side == "left":
                store = _table_store(
                    subtopology, f"{spec.name}-left", fk.left_table, spec.left_value_serde
                )
            else:
                store = _table_store(
                    subtopology, f"{spec.name}-right", fk.right_table, spec.right_value_serde
                )
            stores[store.name] = store
            continue
        if spec.is_global:
            table = spec.right
            stores[table.name] = QueryableStore(
                table.name, GLOBAL, "", table.name, table.key_serde, spec.right_value_serde
            )
            continue
        tables: list[tuple[str, Topic, Serde]] = []
        if spec.is_table_table:
            tables = [
                ("left", spec.left, spec.left_value_serde),
                ("right", spec.right, spec.right_value_serde),
            ]
        elif spec.is_stream_table:
            tables = [("table", spec.right, spec.right_value_serde)]
        for local, table, serde in tables:
            assert isinstance(table, Table)
            stores[table.name] = _table_store(subtopology, f"{spec.name}-{local}", table, serde)
        if tables:
            continue
        for side, topic, serde in (
            ("left", spec.left, spec.left_value_serde),
            ("right", spec.right, spec.right_value_serde),
        ):
            name = f"{spec.name}-{side}"
            stores[name] = QueryableStore(name, "window", subtopology, name, topic.key_serde, serde)
    return stores


def task_of(store: QueryableStore, key: bytes, partitions: int) -> TaskId:
    """The task holding `key`: the partition Kafka's default partitioner gives it."""
    return TaskId(store.subtopology, partition_for_key(key, partitions))
