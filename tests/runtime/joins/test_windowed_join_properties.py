"""Properties of the windowed join over random inputs, checked against a brute-force reference.

Whatever the arrival order: a record is dropped exactly when it is late at arrival; every pair of
kept records whose timestamps fit the window is joined exactly once; every kept record that
matched nothing is emitted once as a non-match (on the sides the join kind emits), and a record
that matched is never emitted as a non-match.
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
    storage: tuple[int, int, type] = (0, 1 << 20, str),
) -> list[Any]:
    """`storage`: commit after every so many records (0: never), the window stores' memory
    budget, and the value type (str values are immutable, so their decoded values are kept)."""
    commit_every, memory, value_type = storage
    app = App("props", window_memory_bytes=memory)
    left, right = app.topic("L", value_type=value_type), app.topic("R", value_type=value_type)
    window = JoinWindows(before=before, after=after, grace=grace)
    app.join(left, right, window=window, how=how, into="out", name="j")(  # type: ignore[arg-type]
        lambda left_value, right_value: [left_value, right_value]
    )
    with TestDriver(app) as driver:
        for i, (side, key, t) in enumerate(records):
            driver.pipe(side, f"{side}{i}", key=key, timestamp=t)
            if commit_every and i % commit_every == commit_every - 1:
                driver.commit()
        driver.advance_stream_time(10_000)
        return [(r.value[0], r.value[1], r.timestamp) for r in driver.read_output("out")]


def kept(records: list[Record], before: int, after: int, grace: int) -> list[int]:
    """Indexes of records that are not late when they arrive."""
    stream_time, result = -1, []
    for i, (side, _, t) in enumerate(records):
        stream_time = max(stream_time, t)
        reach_after = after if side == "L" else before
        if t + reach_after + grace >= stream_time:
            result.append(i)
    return result


@settings(max_examples=150, deadline=None)
@given(
    how=st.sampled_from(["inner", "left", "outer"]),
    before=st.integers(0, 15),
    after=st.integers(0, 15),
    grace=st.integers(0, 15),
    records=records_strategy,
    storage=st.tuples(
        st.integers(0, 6), st.sampled_from([0, 500, 1 << 20]), st.sampled_from([str, dict])
    ),
)
def test_join_matches_the_brute_force_reference(
    how: str,
    before: int,
    after: int,
    grace: int,
    records: list[Record],
    storage: tuple[int, int, type],
) -> None:
    """Wherever the stores' records are (unflushed, in RocksDB, in memory or not, decoded or
    not), the output is the same."""
    output = run(how, before, after, grace, records, storage)
    alive = kept(records, before, after, grace)
    lefts = [i for i in alive if records[i][0] == "L"]
    rights = [i for i in alive if records[i][0] == "R"]
    expected: Counter[tuple[str | None, str | None, int]] = Counter()
    matched: set[int] = set()
    for li in lefts:
        for ri in rights:
            (_, lk, lt), (_, rk, rt) = records[li], records[ri]
            if lk == rk and lt - before <= rt <= lt + after:
                expected[(f"L{li}", f"R{ri}", max(lt, rt))] += 1
                matched.update((li, ri))
    if how in ("left", "outer"):
        expected.update((f"L{i}", None, records[i][2]) for i in lefts if i not in matched)
    if how == "outer":
        expected.update((None, f"R{i}", records[i][2]) for i in rights if i not in matched)
    assert Counter(output) == expected


@settings(max_examples=40, deadline=None)
@given(
    how=st.sampled_from(["inner", "left", "outer"]),
    window=st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 15)),
    records=records_strategy,
)
def test_in_order_input_loses_nothing_to_lateness(
    how: str, window: tuple[int, int, int], records: list[Record]
) -> None:
    in_order = sorted(records, key=lambda r: r[2])
    assert kept(in_order, *window) == list(range(len(in_order)))
    output = run(how, *window, in_order)
    joined = {(lv, rv) for lv, rv, _ in output if lv and rv}
    non_matched = {lv or rv for lv, rv, _ in output if not (lv and rv)}
    assert not any(lv in non_matched or rv in non_matched for lv, rv in joined)
