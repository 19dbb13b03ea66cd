"""The input buffers' bound: records per input, and bytes of all inputs together."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.runtime.tasks.input_size import RECORD_OVERHEAD_BYTES, RecordSize, inputs_to_pause


def records(count: int, value_size: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(key=b"k" * 10, value=b"v" * value_size) for _ in range(count)]


def test_the_record_size_follows_the_recent_fetches() -> None:
    size = RecordSize()
    assert size.bytes_of(10) == 10 * RECORD_OVERHEAD_BYTES  # nothing fetched yet
    size.observe(records(5_000, 290))
    assert size.mean == RECORD_OVERHEAD_BYTES + 300
    for _ in range(2_000):  # the traffic changes: larger values
        size.observe(records(500, 990))
    assert abs(size.mean - (RECORD_OVERHEAD_BYTES + 1_000)) < 10
    size.observe([SimpleNamespace(key=None, value=None)])  # a tombstone without a key
    assert size.bytes_of(1_000) < 1_000 * (RECORD_OVERHEAD_BYTES + 1_000)


@given(
    buffered=st.dictionaries(st.integers(0, 20), st.integers(0, 30_000), max_size=12),
    limit=st.integers(1, 20_000),
    max_bytes=st.integers(0, 20 << 20),
)
def test_inputs_pause_past_their_count_and_all_with_records_past_the_bytes(
    buffered: dict[int, int], limit: int, max_bytes: int
) -> None:
    size = RecordSize()
    size.observe(records(1, 400))
    paused = inputs_to_pause(buffered, limit, max_bytes, size)
    over = size.bytes_of(sum(buffered.values())) > max_bytes
    for tp, count in buffered.items():
        if count > limit:
            assert tp in paused
        if count == 0:
            assert tp not in paused  # a task waiting for this side always gets its records
        if 0 < count <= limit:
            assert (tp in paused) == over


def test_a_small_budget_pauses_every_input_that_holds_records() -> None:
    size = RecordSize()
    size.observe(records(100, 472))  # 600 bytes a record
    buffered = {"left-0": 10_000, "right-0": 0, "left-1": 100, "right-1": 50}
    assert inputs_to_pause(buffered, 20_000, 16 << 20, size) == set()
    assert inputs_to_pause(buffered, 20_000, 4 << 20, size) == {"left-0", "left-1", "right-1"}
    assert inputs_to_pause(buffered, 5_000, 16 << 20, size) == {"left-0"}
