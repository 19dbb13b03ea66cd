"""The windowed stream-stream join of one task, with Kafka Streams' semantics since 3.1 and
without its one spurious case.

Records of both sides go into their side's window store. A record at time t joins every record
of the other side with the same key whose timestamp lies in [t - before, t + after] (seen from
the right side, before and after swap); the output carries the larger of the two timestamps.

Stream time is the largest timestamp the task has seen on either side. A record is late, and
dropped, when its own window plus grace has closed: t + after + grace < stream time. A left (or
outer) record that has matched nothing is held in the pending store and emitted once, with
None for the other side, only when no record that could still match it can arrive without being
late: when t + before + after + grace < stream time. (Kafka Streams emits at t + after + grace,
so an out-of-order match within grace can follow a non-match it already emitted.)

A record is decoded once, when it arrives (an undecodable one is a bad record then, before it is
stored). When its side's serde decodes immutable values, the decoded record travels with it
through the window store's memory and the pending non-matches, so matching it again and
emitting it as a non-match do not decode it again.
"""

from __future__ import annotations

from streamjoin.dsl.serdes import Serde, decodes_immutable
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.counters import JoinCounters
from streamjoin.runtime.joins.pending import PendingNonMatches
from streamjoin.runtime.joins.records import (
    Joined,
    JoinOutput,
    Side,
    SourceRecord,
    join_output,
    pack_stored,
    unpack_stored,
)
from streamjoin.state.stores.encoding import NO_TIME
from streamjoin.state.stores.window_store import WindowStore

__all__ = ("WindowedJoin",)


class WindowedJoin:
    """Processes one task's records of both sides in the order the task chooses."""

    def __init__(
        self,
        spec: JoinSpec,
        left: WindowStore,
        right: WindowStore,
        pending: PendingNonMatches | None,
    ) -> None:
        window = spec.window
        if window is None:
            raise ValueError(f"join {spec.name!r} has no window")
        self.counters = JoinCounters()
        self._grace = window.grace_ms
        self._retention = window.retention_ms
        self._reach = {Side.LEFT: window.reach_ms(True), Side.RIGHT: window.reach_ms(False)}
        self._stores = {Side.LEFT: left, Side.RIGHT: right}
        self._serdes: dict[Side, Serde] = {
            Side.LEFT: spec.left_value_serde,
            Side.RIGHT: spec.right_value_serde,
        }
        self._keeps_decoded = {
            side: decodes_immutable(serde) for side, serde in self._serdes.items()
        }
        self._emits_unmatched = {
            Side.LEFT: spec.how in ("left", "outer"),
            Side.RIGHT: spec.how == "outer",
        }
        if pending is None and spec.how != "inner":
            raise ValueError(f"{spec.how} join {spec.name!r} needs a pending store")
        self._pending = pending
        # Stream time starts afresh with each incarnation of the task instead of resuming from
        # the restored stores: those may hold writes made after the last committed offset, and
        # records replayed from that offset must not count as late against their own future.
        self.stream_time = NO_TIME

    def process(self, record: SourceRecord) -> list[JoinOutput]:
        """Outputs caused by `record`: its matches, then non-matches whose time has come.

        A value its side's serde cannot decode raises SerdeError before anything changes.
        """
        side, key, t = record.side, record.key, record.timestamp
        if record.value is None:
            self.counters.skipped += 1
            return []
        value = self._serdes[side].deserialize(record.value)
        if key is None:
            if not self._emits_unmatched[side]:
                self.counters.skipped += 1
                return []
            self.counters.unmatched += 1
            return [join_output(side, None, Joined(value, record.value, record.offset), None, t)]
        self.stream_time = max(self.stream_time, t)
        before, after = self._reach[side]
        if t + after + self._grace < self.stream_time:
            self.counters.late_dropped += 1
            return []
        stored = pack_stored(record.offset, record.value)
        this = Joined(value, record.value, record.offset)
        memo = this if self._keeps_decoded[side] else None
        self._stores[side].put(key, t, stored, memo)
        outputs = self._matches(side, key, this, t, (t - before, t + after))
        if not outputs and self._emits_unmatched[side]:
            assert self._pending is not None
            self._pending.add(t, side, key, record.offset, stored, memo=memo)
        outputs += self._closed_non_matches()
        return outputs

    def _matches(
        self, side: Side, key: bytes, this: Joined, t: int, window: tuple[int, int]
    ) -> list[JoinOutput]:
        other = side.other
        outputs: list[JoinOutput] = []
        found = self._stores[other].fetch_with_memos(key, *window)
        if not found:
            return outputs
        pending = self._pending if self._emits_unmatched[other] else None
        seen: set[int] | None = set() if len(found) > 1 else None  # most records match once
        for other_t, stored, memo in found:
            that: Joined = memo if memo is not None else self._decode(other, stored)
            if seen is not None:
                if that.offset in seen:
                    continue  # the same source record stored twice by an at-least-once replay
                seen.add(that.offset)
            if pending is not None:
                pending.discard(other_t, other, key)
            outputs.append(join_output(side, key, this, that, max(t, other_t)))
        self.counters.matched += len(outputs)
        return outputs

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        """Move stream time forward without a record (the test driver's clock); returns the
        non-matches that this closes."""
        self.stream_time = max(self.stream_time, stream_time)
        return self._closed_non_matches()

    def _closed_non_matches(self) -> list[JoinOutput]:
        cutoff = self.stream_time - self._retention
        if self._pending is None or not self._pending.any_before(cutoff):
            return []  # most records close nothing
        outputs = [
            join_output(
                side, key, memo if memo is not None else self._decode(side, stored), None, ts
            )
            for ts, side, key, stored, memo in self._pending.pop_until(cutoff)
        ]
        self.counters.unmatched += len(outputs)
        return outputs

    def _decode(self, side: Side, stored: bytes) -> Joined:
        """A stored record of `side` (it decoded when it arrived)."""
        offset, raw = unpack_stored(stored)
        return Joined(self._serdes[side].deserialize(raw), raw, offset)
