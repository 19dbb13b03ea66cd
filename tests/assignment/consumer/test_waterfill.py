from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.waterfill import deal, fill_order, water_caps


def greedy(loads: list[int], caps: list[int] | None, units: int) -> list[int]:
    """The literal one-unit-at-a-time hand-out: least loaded first, then lowest index."""
    current = list(loads)
    order = []
    for _ in range(units):
        eligible = [m for m in range(len(current)) if caps is None or current[m] < caps[m]]
        member = min(eligible, key=lambda m: (current[m], m))
        order.append(member)
        current[member] += 1
    return order


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 4)), max_size=8))
def test_fill_order_is_the_greedy_sequence(spec: list[tuple[int, int]]) -> None:
    loads = [load for load, _ in spec]
    caps = [load + extra for load, extra in spec]
    units = sum(extra for _, extra in spec)
    assert fill_order(loads, caps) == greedy(loads, caps, units)


@given(st.lists(st.integers(0, 8), min_size=1, max_size=8), st.integers(0, 30))
def test_water_caps_are_the_greedy_end_loads(loads: list[int], units: int) -> None:
    order = greedy(loads, None, units)
    expected = list(loads)
    for member in order:
        expected[member] += 1
    caps = water_caps(loads, units)
    assert caps == expected
    assert fill_order(loads, caps) == order


def test_fresh_fill_is_round_robin() -> None:
    assert fill_order([0, 0, 0], [3, 3, 2]) == [0, 1, 2, 0, 1, 2, 0, 1]


def test_no_members_can_take_no_units() -> None:
    assert water_caps([], 0) == []
    with pytest.raises(ValueError, match="no members"):
        water_caps([], 1)


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 4)), max_size=8))
def test_deal_hands_out_units_in_fill_order(spec: list[tuple[int, int]]) -> None:
    loads = [load for load, _ in spec]
    caps = [load + extra for load, extra in spec]
    units = list(range(100, 100 + sum(extra for _, extra in spec)))
    expected: list[list[int]] = [[-1] for _ in spec]
    for unit, member in zip(units, fill_order(loads, caps), strict=True):
        expected[member].append(unit)
    dealt: list[list[int]] = [[-1] for _ in spec]
    deal(units, loads, caps, dealt)
    assert dealt == expected


def test_deal_refuses_units_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="3 units for 2 places"):
        deal([1, 2, 3], [0, 0], [1, 1], [[], []])
