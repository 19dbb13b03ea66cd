"""The stream-table join of one task against a versioned table (Kafka Streams' KIP-914): each
stream record joins the table value that was valid at the record's own timestamp, not the
latest one. Table updates, in any order within the table's history, take their place among the
key's versions and emit nothing; one older than the history is dropped (`too_old_updates`). A
stream record older than the history (`too_old`) joins only the key's latest version, if that
was valid at its time: a key's latest version never expires (as in Kafka Streams 4.4); a left
join emits it with None otherwise.
"""

from __future__ import annotations

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.records import SourceRecord
from streamjoin.runtime.joins.table import StreamTableJoin
from streamjoin.state.stores.table_values import pack_table_value
from streamjoin.state.stores.versioned_store import VersionedStore

__all__ = ("VersionedTableJoin",)


class VersionedTableJoin(StreamTableJoin):
    def __init__(self, spec: JoinSpec, table: VersionedStore) -> None:
        super().__init__(spec)
        self._versions = table

    def _lookup(self, key: bytes | None, timestamp: int) -> bytes | None:
        if key is None:
            return None
        if self._versions.too_old(timestamp):
            self.counters.too_old += 1
            return self._versions.get_latest_as_of(key, timestamp)
        return self._versions.get_as_of(key, timestamp)

    def _update_table(self, record: SourceRecord) -> None:
        key, value = record.key, record.value
        if key is None:
            self.counters.skipped += 1
        else:
            stored = None
            if value is not None:
                self._table_serde.deserialize(value)  # a bad table value is a bad record
                stored = pack_table_value(record.offset, record.timestamp, value)
            if not self._versions.put(key, record.timestamp, stored):
                self.counters.too_old_updates += 1
        self._versions.source_applied(record.offset)
