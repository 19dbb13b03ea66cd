"""Which record a task processes next: lowest timestamp first, waiting only when it must."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.runtime.tasks.ordering import UNKNOWN_LAG_WAIT_MS, TimestampOrderedInputs


@dataclass(frozen=True)
class R:
    timestamp: int
    offset: int = 0


def test_lowest_timestamp_across_inputs_first() -> None:
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=0)
    inputs.add(0, [R(5), R(9)])
    inputs.add(1, [R(7)])
    order = [inputs.next(0, lambda i: 0) for _ in range(3)]
    assert [(i, r.timestamp) for i, r in order if r] == [(0, 5), (1, 7), (0, 9)]  # type: ignore[misc]


timestamps = st.lists(st.integers(0, 50), max_size=30).map(sorted)


@given(st.lists(timestamps, min_size=1, max_size=4))
def test_caught_up_inputs_merge_by_timestamp(partitions: list[list[int]]) -> None:
    """Any number of inputs (two take a shortcut): with nothing more on the broker, every
    record comes out, in timestamp order, each input's in its own order."""
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(len(partitions), max_idle_ms=0)
    for index, stamps in enumerate(partitions):
        inputs.add(index, [R(t) for t in stamps])
    order = []
    while (picked := inputs.next(0, lambda i: 0)) is not None:
        order.append((picked[1].timestamp, picked[0]))
    assert [t for t, _ in order] == sorted(t for stamps in partitions for t in stamps)
    for index, stamps in enumerate(partitions):
        assert [t for t, i in order if i == index] == stamps


def test_between_equal_timestamps_the_input_that_waited_longer_goes_first() -> None:
    """As Kafka Streams' queue of partitions by head time: input 1 had records first, so it
    wins the first tie; then input 0 has waited longer, and so on."""
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=0)
    inputs.add(1, [R(5), R(5)])
    inputs.add(0, [R(5), R(5)])
    order = [inputs.next(0, lambda i: 0) for _ in range(4)]
    assert [i for i, _ in order] == [1, 0, 1, 0]  # type: ignore[misc]


def test_waits_while_an_empty_input_has_records_on_the_broker() -> None:
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=1_000)
    inputs.add(0, [R(5)])
    assert inputs.next(0, lambda i: 3 if i == 1 else 0) is None
    assert inputs.next(1_000_000, lambda i: 3 if i == 1 else 0) is None  # no timeout: it is coming


def test_a_caught_up_empty_input_does_not_hold_the_task_back() -> None:
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=0)
    inputs.add(0, [R(5)])
    assert inputs.next(0, lambda i: 0) == (0, R(5))


def test_an_input_never_fetched_is_waited_for_a_bounded_time() -> None:
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=0)
    inputs.add(0, [R(5), R(6)])
    unknown = {0: 0, 1: None}
    assert inputs.next(0, unknown.get) is None
    assert inputs.next(UNKNOWN_LAG_WAIT_MS - 1, unknown.get) is None
    assert inputs.next(UNKNOWN_LAG_WAIT_MS, unknown.get) == (0, R(5))


def test_a_caught_up_input_is_waited_for_max_idle_for_new_data() -> None:
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=500)
    inputs.add(0, [R(5)])
    assert inputs.next(0, lambda i: 0) is None
    assert inputs.next(500, lambda i: 0) == (0, R(5))


def test_a_drained_task_does_not_wait_again_for_an_input_that_stayed_empty() -> None:
    """As Kafka Streams' idle deadlines: input 1 is empty from 0 on, so once 500 ms have passed
    the task goes on without it, also after its buffers drained (it used to wait 500 ms per
    fetched batch of input 0); an input that had records and is empty again is waited for
    afresh."""
    inputs: TimestampOrderedInputs[R] = TimestampOrderedInputs(2, max_idle_ms=500)
    inputs.add(0, [R(5)])
    assert inputs.next(0, lambda i: 0) is None
    assert inputs.next(500, lambda i: 0) == (0, R(5))
    assert inputs.next(600, lambda i: 0) is None  # drained
    inputs.add(0, [R(7)])
    assert inputs.next(700, lambda i: 0) == (0, R(7))
    inputs.add(1, [R(8)])
    assert inputs.next(710, lambda i: 0) is None  # input 0 is empty now: waited for afresh
    assert inputs.next(1_209, lambda i: 0) is None
    assert inputs.next(1_210, lambda i: 0) == (1, R(8))
