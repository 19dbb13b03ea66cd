"""The two halves of a foreign-key join (KIP-213; see dsl/foreign_key.py for the topology),
with Kafka Streams 4.4's results: the same records, tombstones and timestamps.

Subscription record: key = foreign key,  value = instruction(1) | hash(16) | left key
Response record:     key = left key,     value = hash(16) | right offset(8) | right timestamp(8)
                                                  | right value (absent: no right value)
The hash is of the left value's bytes (16 zero bytes for a deleted one): the left side joins a
response only while its current left value has that hash, so a response to a value changed (or
deleted) since is discarded. A response carries the timestamp of what caused it: a right
update's own, or for a subscription the later of the left update's and the right value's. The
instructions (Kafka Streams' SubscriptionWrapper instructions):
- `s` subscribe and answer, with or without a right value (a left join, or an inner join's
  changed left value: an answer without a value takes the old result back);
- `o` subscribe and answer only with a right value (an inner join's new left value: there is no
  old result to take back);
- `u` unsubscribe, no answer (the old key of a changed foreign key);
- `d` unsubscribe and answer without a value (an inner join's left delete, or a foreign key
  gone: the tombstone then carries the later of the delete's and the right value's timestamps).
A left join's left value without a foreign key is emitted at once with None, a left delete as a
tombstone (nothing on the right side can change either).

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
SUBSCRIBE_IF_FOUND = b"o"
UNSUBSCRIBE = b"u"
UNSUBSCRIBE_AND_ANSWER = b"d"
_HASH = 16
ABSENT = b"\0" * _HASH
"""The hash of no left value."""
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
        key, timestamp = record.key, record.timestamp
        if key is None:  # refused on admission; kept for safety of the store
            self.counters.skipped += 1
            return []
        old = self._store.get(key)
        lost = old is None and record.offset < self._store.restored_end
        """Processed again after a restore that applied it: its old value is unknown."""
        old_fk = None if old is None else self._foreign_key(unpack_table_value(old)[2])
        this: Joined | None = None
        new_fk: bytes | None = None
        digest = ABSENT
        if record.value is not None:
            this = Joined(self._left_serde.deserialize(record.value), record.value, record.offset)
            new_fk = self._foreign_key_of(this.value)
            digest = value_hash(record.value)
            self._store.put(
                key, pack_table_value(record.offset, timestamp, record.value), timestamp
            )
        else:
            self._store.delete(key, timestamp)
        self._store.source_applied(record.offset)
        if old_fk is not None and old_fk != new_fk:
            if new_fk is None and self._inner:
                self._send(old_fk, UNSUBSCRIBE_AND_ANSWER, digest, key, timestamp)
                return []  # the tombstone comes with the answer
            self._send(old_fk, UNSUBSCRIBE, digest, key, timestamp)
        if new_fk is not None:
            # Inner: a new left value asks an answer only if its right value exists (Kafka
            # Streams' too: no result to take back). Any other asks one always, also with its
            # foreign key unchanged, where Kafka Streams asks none: the right delete's answer
            # to the old value may have crossed this update and been discarded as stale, and
            # the old result must still go (docs/joins.md, difference 5).
            answer_always = not self._inner or old_fk is not None or lost
            what = SUBSCRIBE if answer_always else SUBSCRIBE_IF_FOUND
            self._send(new_fk, what, digest, key, timestamp)
            return []  # the result comes with the answer
        if this is not None and not self._inner:
            self.counters.unmatched += 1
            return [JoinOutput(key, this, None, timestamp)]
        if lost or (this is None and old is not None and not self._inner):
            # (an inner join's left value without a foreign key had no result to take back)
            self.counters.retracted += 1
            return [JoinOutput(key, None, None, timestamp)]
        return []

    def _respond(self, record: SourceRecord) -> list[JoinOutput]:
        key, value = record.key, record.value
        if key is None or value is None:
            self.counters.skipped += 1
            return []
        current = self._store.get(key)
        this: Joined | None = None
        digest = ABSENT
        if current is not None:
            offset, _, raw = unpack_table_value(current)
            this = Joined(self._left_serde.deserialize(raw), raw, offset)
            digest = value_hash(raw)
        if digest != value[:_HASH]:
            self.counters.stale += 1
            return []
        at = record.timestamp
        if len(value) == _HASH:
            if self._inner or this is None:
                self.counters.retracted += 1
                return [JoinOutput(key, None, None, at)]
            self.counters.unmatched += 1
            return [JoinOutput(key, this, None, at)]
        if this is None:  # a right value answers no deleted left value
            self.counters.stale += 1
            return []
        right_offset, _ = _RIGHT.unpack_from(value, _HASH)
        right_raw = value[_HASH + _RIGHT.size :]
        that = Joined(self._right_serde.deserialize(right_raw), right_raw, right_offset)
        self.counters.matched += 1
        return [JoinOutput(key, this, that, at)]

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
        if what in (UNSUBSCRIBE, UNSUBSCRIBE_AND_ANSWER):
            self._subscriptions.delete(subscription, timestamp)
            if what == UNSUBSCRIBE_AND_ANSWER:
                self._answer(left_key, digest, self._table.get(fk), timestamp, joined=False)
            return
        self._subscriptions.put(subscription, digest, timestamp)
        stored = self._table.get(fk)
        if stored is not None or what != SUBSCRIBE_IF_FOUND:
            self._answer(left_key, digest, stored, timestamp)

    def _answer(
        self, left_key: bytes, digest: bytes, stored: bytes | None, at: int, *, joined: bool = True
    ) -> None:
        """Send the response at the later of `at` and the right value's time; `joined`: with
        the right value (else without: a tombstone for the left side)."""
        value = digest
        if stored is not None:
            offset, timestamp, raw = unpack_table_value(stored)
            if joined:
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
