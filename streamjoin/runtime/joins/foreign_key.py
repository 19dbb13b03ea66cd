"""The two halves of a foreign-key join (KIP-213; see dsl/foreign_key.py for the topology).

Subscription record: key = foreign key,  value = instruction(1) | hash(16) | left key
Response record:     key = left key,     value = hash(16) | right offset(8) | right timestamp(8)
                                                  | right value (absent: no right value)
The hash is of the left value's bytes: the left side joins a response only while its current
left value has that hash, so a response to a value changed (or deleted) since is discarded.

The left table's store restores from its topic to the end; a left record processed again after
that has lost its old value: a delete then emits its tombstone anyway, and the old foreign key
of a change keeps a subscription whose responses the hash discards.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from streamjoin.dsl.serdes import Serde
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.steps import StepError
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.records import Joined, JoinOutput, Side, SourceRecord
from streamjoin.runtime.output.sink import OutgoingRecord, RecordSink
from streamjoin.state.stores.encoding import encode_varint
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.table_values import pack_table_value, unpack_table_value

__all__ = ("ForeignKeyLeft", "ForeignKeyRight")

SUBSCRIBE = b"s"
UNSUBSCRIBE = b"u"
_HASH = 16
_RIGHT = struct.Struct(">qq")


def value_hash(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=_HASH).digest()


class ForeignKeyLeft:
    """Left table updates out as subscriptions; responses in, joined with the current left value."""

    def __init__(self, spec: JoinSpec, left: KeyValueStore, sink: RecordSink) -> None:
        fk = spec.foreign_key
        assert fk is not None
        self.counters = JoinCounters()
        self._extract = fk.extract
        self._fk_serde: Serde = fk.right_table.key_serde
        self._left_serde: Serde = spec.left_value_serde
        self._right_serde: Serde = fk.right_table.value_serde
        self._subscription = fk.subscription.name
        self._inner = spec.how == "inner"
        self._store = left
        self._sink = sink

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        if record.side is Side.RIGHT:
            return self._respond(record)
        key = record.key
        if key is None:  # refused on admission; kept for safety of the store
            self.counters.skipped += 1
            return []
        old = self._store.get(key)
        old_fk = None if old is None else self._foreign_key(unpack_table_value(old)[2])
        this: Joined | None = None
        new_fk: bytes | None = None
        if record.value is not None:
            this = Joined(self._left_serde.deserialize(record.value), record.value, record.offset)
            new_fk = self._foreign_key_of(this.value)
            stored = pack_table_value(record.offset, record.timestamp, record.value)
            self._store.put(key, stored, record.timestamp)
        else:
            self._store.delete(key, record.timestamp)
        self._store.source_applied(record.offset)
        if old_fk is not None and old_fk != new_fk:
            self._send(old_fk, UNSUBSCRIBE, b"\0" * _HASH, key, record.timestamp)
        if this is not None and new_fk is not None:
            self._send(new_fk, SUBSCRIBE, value_hash(this.raw), key, record.timestamp)
            return []  # the result comes with the response
        if this is not None and not self._inner:
            self.counters.unmatched += 1
            return [JoinOutput(key, this, None, record.timestamp)]
        if old is None and record.offset >= self._store.restored_end:
            return []  # (a delete processed again after a restore that applied it: see below)
        self.counters.retracted += 1
        return [JoinOutput(key, None, None, record.timestamp)]

    def _respond(self, record: SourceRecord) -> list[JoinOutput]:
        key, value = record.key, record.value
        if key is None or value is None:
            self.counters.skipped += 1
            return []
        current = self._store.get(key)
        if current is None:
            self.counters.stale += 1
            return []
        offset, timestamp, raw = unpack_table_value(current)
        if value_hash(raw) != value[:_HASH]:
            self.counters.stale += 1
            return []
        this = Joined(self._left_serde.deserialize(raw), raw, offset)
        at = max(timestamp, record.timestamp)
        if len(value) == _HASH:
            if self._inner:
                self.counters.retracted += 1
                return [JoinOutput(key, None, None, at)]
            self.counters.unmatched += 1
            return [JoinOutput(key, this, None, at)]
        right_offset, right_timestamp = _RIGHT.unpack_from(value, _HASH)
        right_raw = value[_HASH + _RIGHT.size :]
        that = Joined(self._right_serde.deserialize(right_raw), right_raw, right_offset)
        self.counters.matched += 1
        return [JoinOutput(key, this, that, max(at, right_timestamp))]

    def _foreign_key(self, raw: bytes) -> bytes | None:
        return self._foreign_key_of(self._left_serde.deserialize(raw))

    def _foreign_key_of(self, value: Any) -> bytes | None:
        try:
            fk = self._extract(value)
        except Exception as exc:
            raise StepError(f"foreign_key failed: {type(exc).__name__}: {exc}") from exc
        return None if fk is None else self._fk_serde.serialize(fk)

    def _send(self, fk: bytes, what: bytes, digest: bytes, key: bytes, timestamp: int) -> None:
        self._sink.send(OutgoingRecord(self._subscription, fk, what + digest + key, timestamp, []))

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        return []


class ForeignKeyRight:
    """Subscriptions kept per foreign key; each one answered, and every right update sent to
    the current subscribers of its key."""

    def __init__(
        self, spec: JoinSpec, right: KeyValueStore, subscriptions: KeyValueStore, sink: RecordSink
    ) -> None:
        fk = spec.foreign_key
        assert fk is not None
        self.counters = JoinCounters()
        self._right_serde: Serde = fk.right_table.value_serde
        self._response = fk.response.name
        self._table = right
        self._subscriptions = subscriptions
        self._sink = sink

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        key, value = record.key, record.value
        if key is None:
            self.counters.skipped += 1
            return []
        if record.side is Side.LEFT:
            self._subscribe(key, value, record.timestamp)
            return []
        if value is None:
            self._table.delete(key, record.timestamp)
            stored = None
        else:
            self._right_serde.deserialize(value)  # a bad right value is a bad record
            stored = pack_table_value(record.offset, record.timestamp, value)
            self._table.put(key, stored, record.timestamp)
        self._table.source_applied(record.offset)
        prefix = _prefix(key)
        for subscription, digest in self._subscriptions.range(prefix, _after(prefix)):
            left_key = subscription[len(prefix) :]
            self._answer(left_key, digest, stored, record.timestamp)
        return []

    def _subscribe(self, fk: bytes, value: bytes | None, timestamp: int) -> None:
        if value is None or len(value) < 1 + _HASH:
            self.counters.skipped += 1
            return
        what, digest, left_key = value[:1], value[1 : 1 + _HASH], value[1 + _HASH :]
        subscription = _prefix(fk) + left_key
        if what == UNSUBSCRIBE:
            self._subscriptions.delete(subscription, timestamp)
            return
        self._subscriptions.put(subscription, digest, timestamp)
        self._answer(left_key, digest, self._table.get(fk), timestamp)

    def _answer(self, left_key: bytes, digest: bytes, stored: bytes | None, at: int) -> None:
        value = digest
        if stored is not None:
            offset, timestamp, raw = unpack_table_value(stored)
            value = digest + _RIGHT.pack(offset, timestamp) + raw
            at = max(at, timestamp)
        self._sink.send(OutgoingRecord(self._response, left_key, value, at, []))

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        return []


def _prefix(fk: bytes) -> bytes:
    """Subscription store keys of one foreign key: varint(len) | fk is prefix-free."""
    return encode_varint(len(fk)) + fk


def _after(prefix: bytes) -> bytes:
    """The smallest key above every key that starts with `prefix`."""
    head = prefix.rstrip(b"\xff")
    if not head:
        return prefix + b"\xff" * 8  # no key of a store starts with eight more 0xff here
    return head[:-1] + bytes((head[-1] + 1,))
