"""The stream-table join of one task against a versioned table (Kafka Streams' KIP-914): each
stream record joins the table value that was valid at the record's own timestamp, not the
latest one. Table updates, in any order within the table's history, take their place among the
key's versions and emit nothing; one older than the history is dropped (`late_dropped`). A
stream record older than the history joins nothing (`too_old`); a left join emits it with None.
"""

from __future__ import annotations

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import Joined, JoinOutput, Side, SourceRecord
from streamjoin.state.table_values import pack_table_value, unpack_table_value
from streamjoin.state.versioned_store import VersionedStore

__all__ = ("VersionedTableJoin",)


class VersionedTableJoin:
    def __init__(self, spec: JoinSpec, table: VersionedStore) -> None:
        self.counters = JoinCounters()
        self._table = table
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
        stored: bytes | None = None
        if self._table.too_old(timestamp):
            self.counters.too_old += 1
        elif key is not None:
            stored = self._table.get_as_of(key, timestamp)
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
        """Stream time closes nothing here (the table's history moves with its own writes)."""
        return []

    def _update_table(self, record: SourceRecord) -> None:
        key, value = record.key, record.value
        if key is None:
            self.counters.skipped += 1
        else:
            stored = None
            if value is not None:
                self._table_serde.deserialize(value)  # a bad table value is a bad record
                stored = pack_table_value(record.offset, record.timestamp, value)
            if not self._table.put(key, record.timestamp, stored):
                self.counters.late_dropped += 1
        self._table.source_applied(record.offset)
