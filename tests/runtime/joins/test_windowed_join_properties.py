"""Properties of the windowed join over random inputs, checked against a brute-force reference
of Kafka Streams' store semantics (the differential suite checks the same against Kafka Streams
itself).

Whatever the arrival order: a record joins exactly the records of the other side with its key,
in its window, that the other side's store still keeps (those above that side's largest
timestamp minus before + after + grace), each pair once; every record that matched nothing is
emitted once as a non-match (on the sides the join kind emits), and a record that matched is
never emitted as a non-match; late records are counted, joined or not.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.testing import TestDriver

Record = tuple[str, str, int]  # side ("L"/"R"), key, timestamp

records_strategy = st.lists(
    st.tuples(st.sampled_from("LR"), st.sampled_from("abc"), st.integers(0, 60)),
    max_size=25,
)


def run(
    how: str,
    before: int,
    after: int,
    grace: int,
    records: list[Record],
    storage: tuple[int, int, type, int | None] = (0, 1 << 20, str, None),
) -> tuple[list[Any], tuple[int, int]]:
    """`storage`: commit after every so many records (0: never), the window stores' memory
    budget, the value type (str values are immutable, so their decoded values are kept), and
    the pending non-matches' part of the budget in memory (None: the default)."""
    commit_every, memory, value_type, pending_bytes = storage
    app = App("props", window_memory_bytes=memory)
    left, right = app.topic("L", value_type=value_type), app.topic("R", value_type=value_type)
    window = JoinWindows(before=before, after=after, grace=grace)
    app.join(left, right, window=window, how=how, into="out", name="j")(  # type: ignore[arg-type]
        lambda left_value, right_value: [left_value, right_value]
    )
    with TestDriver(app) as driver:
        if pending_bytes is not None:
            driver.memory.pending.max_bytes = pending_bytes
        for i, (side, key, t) in enumerate(records):
            driver.pipe(side, f"{side}{i}", key=key, timestamp=t)
            if commit_every and i % commit_every == commit_every - 1:
                driver.commit()
        driver.advance_stream_time(10_000)
        counters = driver.counters("j")
        output = [(r.value[0], r.value[1], r.timestamp) for r in driver.read_output("out")]
        return output, (counters.late_joined, counters.late_no_partner)


def reference(
    how: str, before: int, after: int, grace: int, records: list[Record]
) -> tuple[Counter[tuple[str | None, str | None, int]], tuple[int, int]]:
    """The outputs (once every non-match is due) and (late joined, late with no partner)."""
    retention = before + after + grace
    store_time = {"L": -1, "R": -1}
    kept: dict[str, list[tuple[int, str, int]]] = {"L": [], "R": []}
    expected: Counter[tuple[str | None, str | None, int]] = Counter()
    matched: set[int] = set()
    stream_time, late = -1, [0, 0]
    for i, (side, key, t) in enumerate(records):
        other = "R" if side == "L" else "L"
        stream_time = max(stream_time, t)
        store_time[side] = max(store_time[side], t)
        if t > store_time[side] - retention:
            kept[side].append((i, key, t))
        low, high = (t - before, t + after) if side == "L" else (t - after, t + before)
        partners = [
            (j, t2)
            for j, k2, t2 in kept[other]
            if k2 == key and low <= t2 <= high and t2 > store_time[other] - retention
        ]
        for j, t2 in partners:
            names = (f"L{i}", f"R{j}") if side == "L" else (f"L{j}", f"R{i}")
            expected[(*names, max(t, t2))] += 1
            matched.update((i, j))
        if t + (after if side == "L" else before) + grace < stream_time:
            late[0 if partners else 1] += 1
    emitting = {"inner": "", "left": "L", "outer": "LR"}[how]
    for i, (side, _, t) in enumerate(records):
        if side in emitting and i not in matched:
            expected[(f"L{i}", None, t) if side == "L" else (None, f"R{i}", t)] += 1
    return expected, (late[0], late[1])


windows = st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 15)).filter(any)


@settings(max_examples=150, deadline=None)
@given(
    how=st.sampled_from(["inner", "left", "outer"]),
    window=windows,
    records=records_strategy,
    storage=st.tuples(
        st.integers(0, 6),
        st.sampled_from([0, 500, 1 << 20]),
        st.sampled_from([str, dict]),
        st.sampled_from([None, 0, 1_500]),
    ),
)
def test_join_matches_the_brute_force_reference(
    how: str,
    window: tuple[int, int, int],
    records: list[Record],
    storage: tuple[int, int, type, int | None],
) -> None:
    """Wherever the stores' records are (unflushed, in RocksDB, in memory or not, decoded or
    not; pending non-matches in memory or in their store only), the output is the same."""
    output, late = run(how, *window, records, storage)
    expected, expected_late = reference(how, *window, records)
    assert Counter(output) == expected
    assert late == expected_late


@settings(max_examples=40, deadline=None)
@given(
    how=st.sampled_from(["inner", "left", "outer"]),
    window=windows,
    records=records_strategy,
)
def test_in_order_input_has_no_late_records_and_no_contradicted_non_match(
    how: str, window: tuple[int, int, int], records: list[Record]
) -> None:
    in_order = sorted(records, key=lambda r: r[2])
    output, late = run(how, *window, in_order)
    assert late == (0, 0)
    joined = {(lv, rv) for lv, rv, _ in output if lv and rv}
    non_matched = {lv or rv for lv, rv, _ in output if not (lv and rv)}
    assert not any(lv in non_matched or rv in non_matched for lv, rv in joined)
