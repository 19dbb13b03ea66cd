"""The stream-global-table join of one task: each stream record looks up the global table's
current value for the key its `key=` gives (as Kafka Streams' KStream-GlobalKTable join). The
output keeps the stream record's key and partition; the table is updated outside the task (the
worker's global table feed), so nothing here writes it."""

from __future__ import annotations

from typing import Protocol

from streamjoin.dsl.serdes import SerdeError
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import Joined, JoinOutput, SourceRecord
from streamjoin.state.stores.global_store import unpack_global

__all__ = ("GlobalLookup", "GlobalTableJoin")


class GlobalLookup(Protocol):
    def lookup(self, key: bytes) -> bytes | None: ...


class GlobalTableJoin:
    def __init__(self, spec: JoinSpec, table: GlobalLookup) -> None:
        assert spec.lookup is not None
        self.counters = JoinCounters()
        self._topic = spec.right.name
        self._table = table
        self._key_of = spec.lookup.key_of
        self._serialize_key = spec.right.key_serde.serialize
        self._stream_serde = spec.left_value_serde
        self._table_serde = spec.right_value_serde
        self._left = spec.how == "left"

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        """Join a stream record; StepError when `key=` fails on it, SerdeError when the key
        it gives does not serialise (both make it a bad record)."""
        raw = record.value
        if raw is None:
            self.counters.skipped += 1
            return []
        value = self._stream_serde.deserialize(raw)
        this = Joined(value, raw, record.offset)
        stored = self._table.lookup(self._serialize_key(self._key_of(value)))
        if stored is None:
            if not self._left:
                self.counters.no_match_dropped += 1
                return []
            self.counters.unmatched += 1
            return [JoinOutput(record.key, this, None, record.timestamp)]
        partition, offset, table_raw = unpack_global(stored)
        try:
            table_value = self._table_serde.deserialize(table_raw)
        except SerdeError as error:
            raise SerdeError(
                f"its global table value at {self._topic}[{partition}]@{offset} does not "
                f"decode: {error}"
            ) from error
        self.counters.matched += 1
        that = Joined(table_value, table_raw, offset, partition)
        return [JoinOutput(record.key, this, that, record.timestamp)]

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        """Stream time closes nothing in a global-table join."""
        return []
