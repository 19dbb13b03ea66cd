"""The windowed stream-stream join of one task, with Kafka Streams' semantics (4.4) and without
its spurious non-matches.

Records of both sides go into their side's window store. A record at time t joins every record
of the other side with the same key whose timestamp lies in [t - before, t + after] (seen from
the right side, before and after swap) and that the other side's store still keeps; the output
carries the larger of the two timestamps. A store keeps a record while its timestamp is above
its own side's stream time (the largest timestamp put into it) minus before + after + grace,
exactly as Kafka Streams' join stores do.

A record is late when its window plus grace has closed: t + after + grace < stream time, the
largest timestamp the join has seen on either side. A late record is not dropped: it joins
whatever its partners' store still keeps, as in Kafka Streams, and is counted (`late_joined`,
`late_no_partner`). A left (or outer) record that has matched nothing is held in the pending
store and emitted once, with None for the other side, when no record can match it any more:
when its own store no longer keeps it (at once for a record already older than that). Kafka
Streams emits it once t + after + grace < stream time (a late one at once), so a match can
follow a non-match it already emitted; streamjoin never does that.

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
        # Stream time (it only decides what counts as late) starts afresh with each incarnation
        # of the task, as Kafka Streams' does: the restored stores may hold writes made after
        # the last committed offset, and records replayed from that offset must not count as
        # late against their own future.
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
        this = Joined(value, record.value, record.offset)
        if key is None:
            if not self._emits_unmatched[side]:
                self.counters.skipped += 1
                return []
            self.counters.unmatched += 1
            return [join_output(side, None, this, None, t)]
        self.stream_time = max(self.stream_time, t)
        before, after = self._reach[side]
        stored = pack_stored(record.offset, record.value)
        memo = this if self._keeps_decoded[side] else None
        kept = self._stores[side].put(key, t, stored, memo)
        outputs = self._matches(side, key, this, t, (t - before, t + after))
        if t + after + self._grace < self.stream_time:
            if outputs:
                self.counters.late_joined += 1
            else:
                self.counters.late_no_partner += 1
        if not outputs and self._emits_unmatched[side]:
            if not kept:  # its store no longer keeps a record that old: nothing can match it
                self.counters.unmatched += 1
                return [join_output(side, key, this, None, t)]
            assert self._pending is not None
            self._pending.add(t, side, key, record.offset, stored, memo=memo)
        if self._pending is not None:
            outputs += self._closed_non_matches(side)
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
                pending.discard(other_t, other, key, that.offset)
            outputs.append(join_output(side, key, this, that, max(t, other_t)))
        self.counters.matched += len(outputs)
        return outputs

    def advance_to(self, stream_time: int) -> list[JoinOutput]:
        """Move stream time, and both stores' own, forward without a record (the test driver's
        clock); returns the non-matches that this closes, oldest first."""
        self.stream_time = max(self.stream_time, stream_time)
        for store in self._stores.values():
            store.advance_time(stream_time)
        if self._pending is None:
            return []
        outputs = self._closed_non_matches(Side.LEFT) + self._closed_non_matches(Side.RIGHT)
        outputs.sort(key=_timestamp)
        return outputs

    def _closed_non_matches(self, side: Side) -> list[JoinOutput]:
        """Non-matches of `side` that its store no longer keeps: nothing can match them now."""
        pending = self._pending
        assert pending is not None
        store = self._stores[side]
        cutoff = store.stream_time - store.segments.retention_ms + 1
        if not pending.any_before(side, cutoff):
            return []  # most records close nothing
        outputs = [
            join_output(
                side, key, memo if memo is not None else self._decode(side, stored), None, ts
            )
            for ts, side, key, stored, memo in pending.pop_until(side, cutoff)
        ]
        self.counters.unmatched += len(outputs)
        return outputs

    def _decode(self, side: Side, stored: bytes) -> Joined:
        """A stored record of `side` (it decoded when it arrived)."""
        offset, raw = unpack_stored(stored)
        return Joined(self._serdes[side].deserialize(raw), raw, offset)


def _timestamp(output: JoinOutput) -> int:
    return output.timestamp
