"""The stream-table join of one task: each stream record meets the table's latest value for its
key (as Kafka Streams' KStream-KTable join). Table updates change the table and emit nothing.
The table's store is fed by the table's own topic, its changelog (`table_values`).

`StreamTableJoin` is the stream half both table kinds share; a subclass says how the table is
read for a stream record (`_lookup`) and how an update is written (`_update_table`)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import Joined, JoinOutput, Side, SourceRecord
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.table_values import pack_table_value, unpack_table_value

__all__ = ("StreamTableJoin", "TableJoin")


class StreamTableJoin(ABC):
    def __init__(self, spec: JoinSpec) -> None:
        self.counters = JoinCounters()
        self._stream_serde = spec.left_value_serde
        self._table_serde = spec.right_value_serde
        self._left = spec.how == "left"

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        if record.side is Side.RIGHT:
            self._update_table(record)
            return []
        if record.value is None:
            self.counters.skipped += 1
            return []
        this = Joined(self._stream_serde.deserialize(record.value), record.value, record.offset)
        key, timestamp = record.key, record.timestamp
        stored = self._lookup(key, timestamp)
        if stored is None:
            if not self._left:
                return []
            self.counters.unmatched += 1
            return [JoinOutput(key, this, None, timestamp)]
        table_offset, _, raw = unpack_table_value(stored)
        self.counters.matched += 1
        that = Joined(self._table_serde.deserialize(raw), raw, table_offset)
        return [JoinOutput(key, this, that, timestamp)]

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        """Stream time closes nothing in a stream-table join (a versioned table's history moves
        with its own writes)."""
        return []

    @abstractmethod
    def _lookup(self, key: bytes | None, timestamp: int) -> bytes | None:
        """The stored table value a stream record with this key and time joins, or None."""

    @abstractmethod
    def _update_table(self, record: SourceRecord) -> None:
        """Apply a record of the table's topic to the table."""


class TableJoin(StreamTableJoin):
    def __init__(self, spec: JoinSpec, table: KeyValueStore) -> None:
        super().__init__(spec)
        self._table = table

    def _lookup(self, key: bytes | None, timestamp: int) -> bytes | None:
        return self._table.get(key) if key is not None else None

    def _update_table(self, record: SourceRecord) -> None:
        if record.key is None:
            self.counters.skipped += 1
        elif record.value is None:
            self._table.delete(record.key, record.timestamp)
        else:
            self._table_serde.deserialize(record.value)  # a bad table value is a bad record
            stored = pack_table_value(record.offset, record.timestamp, record.value)
            self._table.put(record.key, stored, record.timestamp)
        self._table.source_applied(record.offset)
