"""Turn join results into output records: run the user's joiner, serialise, tag the sources.

Every output record names the input records it came from in its headers (`streamjoin.left`,
`streamjoin.right`: "topic:partition:offset"), so an audit can match it exactly.
"""

from __future__ import annotations

from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.joins.records import JoinOutput
from streamjoin.runtime.output.sink import OutgoingRecord, RecordSink
from streamjoin.runtime.tasks.admission import RecordTooLargeError

__all__ = ("LEFT_SOURCE_HEADER", "RIGHT_SOURCE_HEADER", "OutputWriter", "parse_source")

LEFT_SOURCE_HEADER = "streamjoin.left"
RIGHT_SOURCE_HEADER = "streamjoin.right"


def parse_source(header: bytes) -> tuple[str, int, int]:
    """(topic, partition, offset) from a source header."""
    topic, partition, offset = header.decode().rsplit(":", 2)
    return topic, int(partition), int(offset)


class OutputWriter:
    """Writes one task's join results to the join's output topic."""

    def __init__(
        self, spec: JoinSpec, partition: int, sink: RecordSink, max_record_bytes: int
    ) -> None:
        self._joiner = spec.joiner
        self._max_bytes = max_record_bytes
        self._serialize = spec.into.value_serde.serialize
        self._topic = spec.into.name
        self._partition = partition
        self._sink = sink
        self._tombstones = spec.emits_table
        """A table join's output is a table: a result that stops existing becomes a tombstone."""
        self._left_source = f"{spec.left.name}:{partition}:".encode()
        self._right_source = f"{spec.right.name}:{partition}:".encode()
        """Source header values up to the offset, made once."""
        self._right_topic = spec.right.name.encode()
        self.written = 0

    def write(self, result: JoinOutput) -> None:
        """Run the joiner (which may raise: the caller decides what a failure means, as for a
        value too large to write); a joiner returning None emits nothing, or a tombstone in a
        table join. A result with neither side is a tombstone."""
        left, right = result.left, result.right
        payload: bytes | None = None
        if left is not None or right is not None:
            value = self._joiner(left.value if left else None, right.value if right else None)
            if value is not None:
                payload = self._serialize(value)
            elif not self._tombstones:
                return
        if payload is not None and len(payload) > self._max_bytes:
            raise RecordTooLargeError(
                f"the joined value takes {len(payload)} bytes, more than max_record_bytes="
                f"{self._max_bytes}: the broker would refuse it"
            )
        headers = []
        if left is not None:
            headers.append((LEFT_SOURCE_HEADER, b"%s%d" % (self._left_source, left.offset)))
        if right is not None:
            if right.partition < 0:
                source = b"%s%d" % (self._right_source, right.offset)
            else:  # a global table's record, from any partition
                source = b"%s:%d:%d" % (self._right_topic, right.partition, right.offset)
            headers.append((RIGHT_SOURCE_HEADER, source))
        self._sink.send(
            OutgoingRecord(
                self._topic,
                result.key,
                payload,
                result.timestamp,
                headers,
                partition=self._partition if result.key is None else None,
            )
        )
        self.written += 1
