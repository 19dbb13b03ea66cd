"""The table-table join of one task, as Kafka Streams' KTable-KTable join: no window, the
result for a key is the join of both tables' current values for it.

An update on either side (a tombstone deletes) stores the side's new value and looks up the
other side's current one. A result exists for values (l, r) when both are present (inner),
when l is (left), when either is (outer). If one exists after the update, it is emitted. If
none does, a tombstone is emitted when one existed before (judged from the side's old value, as
Kafka Streams does, so no result store is needed) or when the other side has a value (Kafka
Streams sends that tombstone too, though no result existed: the one rule of every table join,
docs/joins.md); otherwise nothing. The output timestamp is the larger of the
update's and the other side's value's.

Each side's store is fed by its own topic (its changelog). A record the task processes again
after a restore that already applied it has lost its old value: a result is then assumed to
have existed, so the worst case is a tombstone for a key without a result, never a missing one.
"""

from __future__ import annotations

from streamjoin.dsl.serdes import Serde
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import Joined, JoinOutput, Side, SourceRecord
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.table_values import pack_table_value, unpack_table_value

__all__ = ("TableTableJoin", "result_exists")


def result_exists(how: str, left: bool, right: bool) -> bool:
    """Whether values present as given make a result of a `how` table-table join."""
    if how == "inner":
        return left and right
    if how == "left":
        return left
    return left or right


class TableTableJoin:
    def __init__(self, spec: JoinSpec, left: KeyValueStore, right: KeyValueStore) -> None:
        self.counters = JoinCounters()
        self._how = spec.how
        self._stores = (left, right)
        self._serdes: tuple[Serde, Serde] = (spec.left_value_serde, spec.right_value_serde)

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        """The result for the record's key after its update, or a tombstone, or nothing. An
        undecodable value (its own or, restored from its topic, the other side's) raises
        SerdeError before anything changes."""
        key = record.key
        side = int(record.side)
        store, other_store = self._stores[side], self._stores[1 - side]
        if key is None:
            self.counters.skipped += 1
            store.source_applied(record.offset)
            return []
        old = store.get(key)
        other = self._decode(1 - side, other_store.get(key))
        timestamp = record.timestamp
        this: Joined | None = None
        if record.value is not None:
            this = Joined(self._serdes[side].deserialize(record.value), record.value, record.offset)
            store.put(key, pack_table_value(record.offset, timestamp, record.value), timestamp)
        else:
            store.delete(key, timestamp)
        store.source_applied(record.offset)
        other_joined: Joined | None = None
        if other is not None:
            other_timestamp, other_joined = other
            timestamp = max(timestamp, other_timestamp)
        present = other_joined is not None
        after = self._exists(side, this is not None, present)
        if after:
            if this is not None and present:
                self.counters.matched += 1
            else:
                self.counters.unmatched += 1
            if side == Side.LEFT:
                return [JoinOutput(key, this, other_joined, timestamp)]
            return [JoinOutput(key, other_joined, this, timestamp)]
        replayed = record.offset < store.restored_end
        if replayed or present or self._exists(side, old is not None, present):
            self.counters.retracted += 1
            return [JoinOutput(key, None, None, timestamp)]
        return []

    def _exists(self, side: int, this: bool, other: bool) -> bool:
        if side == Side.LEFT:
            return result_exists(self._how, this, other)
        return result_exists(self._how, other, this)

    def _decode(self, side: int, stored: bytes | None) -> tuple[int, Joined] | None:
        """(timestamp, record) of a stored table value."""
        if stored is None:
            return None
        offset, timestamp, raw = unpack_table_value(stored)
        return timestamp, Joined(self._serdes[side].deserialize(raw), raw, offset)

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        """Time closes nothing in a table-table join."""
        return []
