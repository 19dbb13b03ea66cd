"""One active join task: buffered input of both sides in, join results and dead letters out.

The worker feeds it records fetched from Kafka; the test driver feeds it records directly.
Both run the same code from here down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Literal

from streamjoin.dsl.serdes import BytesSerde, Serde, SerdeError
from streamjoin.dsl.settings import DEFAULT_MAX_FUTURE_MS, DEFAULT_MAX_RECORD_BYTES
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.steps import StepChain, StepError
from streamjoin.runtime.joins.records import SIDES, JoinOutput, Side, SourceRecord
from streamjoin.runtime.output.dead_letters import BadRecordError, dead_letter
from streamjoin.runtime.output.sink import RecordSink
from streamjoin.runtime.tasks.admission import (
    Admission,
    RecordTooLargeError,
    record_size,
    wall_clock_ms,
)
from streamjoin.runtime.tasks.lateness import LatenessReport, late_records
from streamjoin.runtime.tasks.ordering import NO_LIMIT, TimestampOrderedInputs
from streamjoin.runtime.tasks.output_writer import OutputWriter
from streamjoin.runtime.topology.app_topology import JoinProcessor, TaskId

__all__ = ("JoinTask",)

logger = logging.getLogger(__name__)


def _checking(serde: Serde) -> Serde | None:
    return None if isinstance(serde, BytesSerde) else serde


def _chain(spec: JoinSpec, side: Side) -> StepChain | None:
    """The filter/map_values steps of a side, None without any (the common case)."""
    if side is Side.LEFT:
        steps, read, seen = spec.left_steps, spec.left.value_serde, spec.left_value_serde
    else:
        steps, read, seen = spec.right_steps, spec.right.value_serde, spec.right_value_serde
    return StepChain(steps, read, seen) if steps else None


class JoinTask:
    """Processes partition `task_id.partition` of both inputs of one join, in timestamp order.

    Input records are aiokafka ConsumerRecords or anything with offset, timestamp, key, value.
    """

    def __init__(
        self,
        app_id: str,
        spec: JoinSpec,
        task_id: TaskId,
        processor: JoinProcessor,
        sink: RecordSink,
        *,
        on_error: Literal["dlq", "fail"] = "dlq",
        max_idle_ms: int = 0,
        max_future_ms: int = DEFAULT_MAX_FUTURE_MS,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        time_sorted: frozenset[Side] = frozenset(),
        rekeyed: dict[int, str] | None = None,
    ) -> None:
        """`time_sorted`: sides read in timestamp order rather than offset order (a
        repartition topic that several workers write; see TimeSortedBuffer); `rekeyed`: the
        topic each side read through a key_by comes from (for messages)."""
        self.app_id = app_id
        self.spec = spec
        self.time_sorted = time_sorted
        self.task_id = task_id
        self.processor = processor
        self.dead_letters = 0
        self._sink = sink
        self._on_error = on_error
        self._admission = Admission(
            spec, max_future_ms=max_future_ms, max_record_bytes=max_record_bytes
        )
        self._output = OutputWriter(spec, task_id.partition, sink, max_record_bytes)
        self._inputs: TimestampOrderedInputs[Any] = TimestampOrderedInputs(
            len(spec.input_topics), max_idle_ms, frozenset(int(side) for side in time_sorted)
        )
        self._key_checks: tuple[Serde | None, Serde | None] = (
            _checking(spec.left.key_serde),
            _checking(spec.right.key_serde),
        )
        """Each side's key serde, None where every key decodes (bytes): nothing to check."""
        self._chains = (_chain(spec, Side.LEFT), _chain(spec, Side.RIGHT))
        self.filtered = 0
        """Records a filter step dropped."""
        self.lateness = LatenessReport(spec, str(task_id), rekeyed)
        self._positions: dict[Side, int] = {}
        self._skipped_through: dict[Side, int] = {}
        """Per side: the offset after the last record refused before it was buffered; it counts
        as processed once the records buffered ahead of it are."""

    @property
    def records_out(self) -> int:
        return self._output.written

    def side_of(self, topic: str) -> Side:
        if topic == self.spec.left.name:
            return Side.LEFT
        if topic == self.spec.right.name:
            return Side.RIGHT
        raise ValueError(f"task {self.task_id} does not read topic {topic!r}")

    def add(self, side: Side, records: Iterable[Any]) -> None:
        """Buffer fetched records; those that may not enter the task (see `admission`) are
        refused here, before they can take a place in the timestamp order."""
        batch = records if isinstance(records, list) else list(records)
        now_ms = wall_clock_ms()
        problem = self._admission.problem
        for record in batch:
            if problem(side, record, now_ms) is not None:
                batch = self._refuse(side, batch, now_ms)
                break
        self._inputs.add(side, batch)

    def _refuse(self, side: Side, batch: list[Any], now_ms: int) -> list[Any]:
        """The admitted records of `batch`; the others are dead letters, stamped with the time
        of refusal (a broker may refuse their own timestamp too)."""
        good: list[Any] = []
        for record in batch:
            problem = self._admission.problem(side, record, now_ms)
            if problem is None:
                good.append(record)
                continue
            self._reject(side, record, problem, now_ms)
            if not good and not self._inputs.buffered_for(side):
                self._positions[side] = record.offset + 1  # everything before it is processed
            else:
                self._skipped_through[side] = record.offset + 1
        return good

    def buffered(self) -> int:
        return self._inputs.buffered()

    def buffered_for(self, side: Side) -> int:
        return self._inputs.buffered_for(side)

    def positions(self) -> dict[Side, int]:
        """Next offset to consume per side: everything before it has been processed."""
        positions = dict(self._positions)
        for index, position in self._inputs.sorted_positions().items():
            positions[SIDES[index]] = position
        for side, through in self._skipped_through.items():
            if not self._inputs.buffered_for(side) and through > positions.get(side, 0):
                positions[side] = through
        return positions

    def heads(self) -> dict[Side, Any]:
        """Each side's next buffered record."""
        return {
            SIDES[i]: record for i, record in enumerate(self._inputs.heads()) if record is not None
        }

    def process(
        self,
        now_ms: float,
        lag: Callable[[Side], int | None],
        budget: int = 1_000,
        limit: int = NO_LIMIT,
    ) -> int:
        """Process up to `budget` buffered records in timestamp order, none later than `limit`;
        returns how many. `lag(side)`: records of that side on the broker not yet fetched
        (None: unknown)."""
        done = 0
        next_record, process_one = self._inputs.next, self._process_one
        lag_of_index = lambda index: lag(SIDES[index])  # noqa: E731 - made once per call
        while done < budget:
            picked = next_record(now_ms, lag_of_index, limit)
            if picked is None:
                break
            index, record = picked
            process_one(SIDES[index], record)
            done += 1
        return done

    def next_timestamp(self, now_ms: float, lag: Callable[[Side], int | None]) -> int:
        """The timestamp of the record it would process next (see `TimestampOrderedInputs`)."""
        return self._inputs.next_timestamp(now_ms, lambda index: lag(SIDES[index]))

    def accept(self, side: Side, record: Any, now_ms: int) -> None:
        """Process `record` now: the task it belongs to orders the input of its members itself
        (see `running_task`), so it is admitted here instead of when buffered."""
        problem = self._admission.problem(side, record, now_ms)
        if problem is None:
            self._process_one(side, record)
        else:
            self._reject(side, record, problem, now_ms)

    def advance_stream_time(self, stream_time: int) -> None:
        """Emit what a record at `stream_time` would close, without one (test driver)."""
        self._write(self.processor.advance_to(stream_time))

    def _process_one(self, side: Side, record: Any) -> None:
        try:
            source = self._source(side, record)
            chain = self._chains[side]
            if chain is not None:
                kept, _, source.value = chain.apply(source.value)
                if not kept:
                    self.filtered += 1
                    self._positions[side] = record.offset + 1
                    return
            counters = self.processor.counters
            late = late_records(counters)
            results = self.processor.process(source)
            if late_records(counters) != late:
                stream_time = getattr(self.processor, "stream_time", None)
                self.lateness.late(side, record.timestamp, stream_time)
        except (SerdeError, BadRecordError, StepError) as error:
            self._reject(side, record, error)
        else:
            self._write(results)
        self._positions[side] = record.offset + 1

    def _write(self, results: list[JoinOutput]) -> None:
        for result in results:
            try:
                self._output.write(result)
            except Exception as error:  # noqa: BLE001 - the user's joiner may raise anything
                self._reject_result(result, error)

    def _source(self, side: Side, record: Any) -> SourceRecord:
        key_serde = self._key_checks[side]
        if key_serde is not None and record.key is not None:
            key_serde.deserialize(record.key)
        return SourceRecord(side, record.key, record.value, record.timestamp, record.offset)

    def _topic(self, side: Side) -> str:
        return self.spec.left.name if side is Side.LEFT else self.spec.right.name

    def _reject(
        self, side: Side, record: Any, error: BaseException, timestamp: int | None = None
    ) -> None:
        """Dead-letter `record`, stamped with its own timestamp unless `timestamp` is given;
        a record too large for the broker goes without its value."""
        bad = (
            error
            if isinstance(error, BadRecordError)
            else BadRecordError(
                self.spec.name, self._topic(side), self.task_id.partition, record.offset, error
            )
        )
        at = record.timestamp if timestamp is None else timestamp
        too_large = isinstance(error, RecordTooLargeError)
        value = None if too_large else record.value
        self._dead_letter(
            bad, record.key, value, at, omitted_bytes=record_size(record) if too_large else None
        )

    def _reject_result(self, result: JoinOutput, error: BaseException) -> None:
        """The joiner (or the output serde) failed on a result: the dead letter carries its
        left record if it has one, else its right record, and names it as the source."""
        side, joined = (Side.LEFT, result.left) if result.left else (Side.RIGHT, result.right)
        assert joined is not None
        bad = BadRecordError(
            self.spec.name, self._topic(side), self.task_id.partition, joined.offset, error
        )
        self._dead_letter(bad, result.key, joined.raw, result.timestamp)

    def _dead_letter(
        self,
        bad: BadRecordError,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        *,
        omitted_bytes: int | None = None,
    ) -> None:
        if self._on_error == "fail":
            raise bad from bad.error
        logger.warning("%s; sent to the dead-letter topic", bad)
        self.dead_letters += 1
        self._sink.send(
            dead_letter(self.app_id, bad, key, value, timestamp, omitted_bytes=omitted_bytes)
        )
