"""One stateless repartition task: a partition of a `key_by`'s source in, each record re-keyed
(after its filter/map_values steps) out to the repartition topic.

The new key is partitioned with Kafka's default partitioner by the sink, as any keyed output, so
the join reading the repartition topic finds each key where a Java producer would have put it.
The record's timestamp and headers go along; records leave in offset order, so per-key order is
kept. Its input offsets are committed by the worker's commit loop, after the sink's flush: only
once the re-keyed records are acknowledged (at-least-once across the hop).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Literal

from streamjoin.dsl.serdes import SerdeError
from streamjoin.dsl.spec import Repartition
from streamjoin.dsl.steps import StepChain, StepError
from streamjoin.runtime.joins.records import Side
from streamjoin.runtime.output.dead_letters import BadRecordError, dead_letter
from streamjoin.runtime.output.sink import OutgoingRecord, RecordSink
from streamjoin.runtime.tasks.in_flight import InFlightWrites
from streamjoin.runtime.tasks.ordering import NO_LIMIT, WAITING

__all__ = ("RepartitionTask",)

logger = logging.getLogger(__name__)


class RepartitionTask:
    """Partition `partition` of `repartition.source`; the same interface as a join task with a
    single input (the left side), so the task manager and the test driver run both alike."""

    def __init__(
        self,
        app_id: str,
        repartition: Repartition,
        task_id: Any,
        sink: RecordSink,
        *,
        on_error: Literal["dlq", "fail"] = "dlq",
        writes: InFlightWrites | None = None,
    ) -> None:
        """`writes`: where the worker notes each record on its way to the repartition topic
        (which also chooses its partition); None leaves the partition to the sink."""
        self.app_id = app_id
        self.repartition = repartition
        self.task_id = task_id
        self.dead_letters = 0
        self.filtered = 0
        self.records_out = 0
        self._sink = sink
        self._on_error = on_error
        source = repartition.source
        self._chain = StepChain(
            repartition.steps, source.value_serde, repartition.topic.value_serde
        )
        self._decode = source.value_serde.deserialize
        self._key_of = repartition.key_by.key_of
        self._serialize_key = repartition.key_by.key_serde.serialize
        self._topic = repartition.topic.name
        self._buffer: deque[Any] = deque()
        self._position: int | None = None
        self._writes = writes

    def side_of(self, topic: str) -> Side:
        if topic == self.repartition.source.name:
            return Side.LEFT
        raise ValueError(f"task {self.task_id} does not read topic {topic!r}")

    def add(self, side: Side, records: Iterable[Any]) -> None:
        self._buffer.extend(records)

    def buffered(self) -> int:
        return len(self._buffer)

    def buffered_for(self, side: Side) -> int:
        return len(self._buffer)

    def heads(self) -> dict[Side, Any]:
        return {Side.LEFT: self._buffer[0]} if self._buffer else {}

    def positions(self) -> dict[Side, int]:
        return {} if self._position is None else {Side.LEFT: self._position}

    def process(
        self,
        now_ms: float,
        lag: Callable[[Side], int | None],
        budget: int = 1_000,
        limit: int = NO_LIMIT,
    ) -> int:
        """Re-key up to `budget` buffered records in offset order, stopping at one stamped
        later than `limit` (the worker writes its key_bys' records in time order); returns
        how many."""
        buffer, process_one = self._buffer, self._process_one
        done = 0
        while buffer and done < budget and buffer[0].timestamp <= limit:
            process_one(buffer.popleft())
            done += 1
        return done

    def next_timestamp(self, now_ms: float, lag: Callable[[Side], int | None]) -> int:
        """The timestamp of the next record to re-key; WAITING while the input is empty with
        records on the broker (or not fetched yet), NO_LIMIT when it is caught up."""
        if self._buffer:
            return int(self._buffer[0].timestamp)
        behind = lag(Side.LEFT)
        return WAITING if behind is None or behind > 0 else NO_LIMIT

    def accept(self, side: Side, record: Any, now_ms: int) -> None:
        """Re-key `record` now (its task orders the input of its members itself)."""
        self._process_one(record)

    def _process_one(self, record: Any) -> None:
        try:
            if record.timestamp < 0:
                raise SerdeError(f"invalid timestamp {record.timestamp}")
            if self._chain:
                kept, value, raw = self._chain.apply(record.value)
                if not kept:
                    self.filtered += 1
                    self._position = record.offset + 1
                    return
            else:
                raw = record.value
                value = None if raw is None else self._decode(raw)
            key = self._key_bytes(self._key_of(value))
        except (SerdeError, StepError) as error:
            self._reject(record, error)
        else:
            headers = [(k, v) for k, v in getattr(record, "headers", None) or ()]
            writes, topic, ts = self._writes, self._topic, record.timestamp
            partition = None if writes is None else writes.write(topic, key, ts)
            self._sink.send(OutgoingRecord(topic, key, raw, ts, headers, partition=partition))
            self.records_out += 1
        self._position = record.offset + 1

    def _key_bytes(self, key: Any) -> bytes:
        try:
            return self._serialize_key(key)
        except SerdeError as error:
            key_by = self.repartition.key_by
            raise StepError(
                f"{key_by.describe()} returned a key of type {type(key).__name__}, which its "
                f"{key_by.key_serde.name} key serde cannot encode ({error}); pass key_type= "
                "to key_by"
            ) from error

    def _reject(self, record: Any, error: BaseException) -> None:
        repartition = self.repartition
        bad = BadRecordError(
            repartition.join, repartition.source.name, self.task_id.partition, record.offset, error
        )
        if self._on_error == "fail":
            raise bad from error
        logger.warning("%s; sent to the dead-letter topic", bad)
        self.dead_letters += 1
        self._sink.send(
            dead_letter(self.app_id, bad, record.key, record.value, max(record.timestamp, 0))
        )
