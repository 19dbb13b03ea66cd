"""Capacity shares rounded both ways, and per-subtopology quotas consistent with them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.assignment.tasks.quotas import apportion, row_quotas, share_ranges


def test_shares_follow_capacity_and_integral_shares_are_exact() -> None:
    assert share_ranges(9, {"a": 6, "b": 3}) == {"a": (6, 6), "b": (3, 3)}
    assert share_ranges(10, {"a": 1, "b": 1, "c": 1}) == {"a": (3, 4), "b": (3, 4), "c": (3, 4)}
    assert share_ranges(0, {"a": 1}) == {"a": (0, 0)}


def test_bounds_clamp_shares_and_the_rest_is_shared_out() -> None:
    # a's share of 12 would be 8; capped at 5, the 7 left split 3.5 / 3.5.
    assert share_ranges(12, {"a": 2, "b": 1}, upper={"a": 5}) == {"a": (5, 5), "b": (7, 7)}
    assert share_ranges(3, {"a": 1, "b": 1, "c": 1}, lower={"a": 2}) == {
        "a": (2, 2),
        "b": (0, 1),
        "c": (0, 1),
    }
    with pytest.raises(ValueError, match="cannot split"):
        share_ranges(2, {"a": 1, "b": 1}, lower={"a": 2, "b": 1})


def test_apportion_rounds_up_the_preferred_clients() -> None:
    weights = {"a": 1, "b": 1, "c": 1}
    assert apportion(4, weights, prefer=lambda c, _: c != "b") == {"a": 1, "b": 2, "c": 1}
    assert apportion(5, weights, prefer=lambda c, _: c) == {"a": 2, "b": 2, "c": 1}
    # Each fractional share is ranked with its rounded-down value: a is capped at 0, so b and
    # c share 3 as 1.5 each.
    seen: dict[str, int] = {}
    apportion(3, weights, prefer=seen.setdefault, upper={"a": 0})
    assert seen == {"b": 1, "c": 1}


Layout = tuple[dict[int, int], dict[str, int], dict[int, dict[str, int]]]


@st.composite
def row_layouts(draw: st.DrawFn, *, equal: bool) -> Layout:
    clients = [f"c{i}" for i in range(draw(st.integers(1, 7)))]
    weights = {c: 1 if equal else draw(st.integers(1, 4)) for c in clients}
    rows = {row: draw(st.integers(1, 12)) for row in range(draw(st.integers(1, 5)))}
    held = {}
    for row, size in rows.items():
        owners = draw(st.lists(st.sampled_from(clients), max_size=size))
        held[row] = {c: owners.count(c) for c in set(owners)}
    return rows, weights, held


def _check_totals(
    rows: dict[int, int], weights: dict[str, int], cells: dict[int, dict[str, int]]
) -> dict[str, tuple[int, int]]:
    bounds = share_ranges(sum(rows.values()), weights)
    for row, size in rows.items():
        assert sum(cells[row].values()) == size
    for client, (low, high) in bounds.items():
        assert low <= sum(cells[row][client] for row in rows) <= high
    return bounds


@settings(max_examples=200, deadline=None)
@given(row_layouts(equal=True))
def test_equal_capacities_get_every_row_and_total_rounded_share(layout: Layout) -> None:
    rows, weights, held = layout
    bounds = share_ranges(sum(rows.values()), weights)
    cells = row_quotas(rows, weights, bounds, held, {})
    _check_totals(rows, weights, cells)
    for row, size in rows.items():
        share = Fraction(size, len(weights))
        for count in cells[row].values():
            assert share - 1 < count < share + 1


@settings(max_examples=200, deadline=None)
@given(row_layouts(equal=False))
def test_any_capacities_keep_totals_within_their_rounded_share(layout: Layout) -> None:
    rows, weights, held = layout
    cells = row_quotas(rows, weights, share_ranges(sum(rows.values()), weights), held, {})
    _check_totals(rows, weights, cells)


def test_a_balanced_layout_is_reproduced_exactly() -> None:
    # Two rows of three tasks over two clients: a holds 2 of row 0, b holds 2 of row 1.
    rows = {0: 3, 1: 3}
    weights = {"a": 1, "b": 1}
    held = {0: {"a": 2, "b": 1}, 1: {"a": 1, "b": 2}}
    assert row_quotas(rows, weights, share_ranges(6, weights), held, {}) == held


def test_the_extra_goes_where_a_held_task_would_otherwise_move() -> None:
    # Three single-task rows over three clients, each client one task in total.
    # a claims rows 0 and 1, b claims row 2: row 1's extra must go to c, not b.
    rows = {0: 1, 1: 1, 2: 1}
    weights = {"a": 1, "b": 1, "c": 1}
    held = {0: {"a": 1}, 1: {"a": 1}, 2: {"b": 1}}
    cells = row_quotas(rows, weights, share_ranges(3, weights), held, {})
    assert cells == {
        0: {"a": 1, "b": 0, "c": 0},
        1: {"a": 0, "b": 0, "c": 1},
        2: {"a": 0, "b": 1, "c": 0},
    }


def test_extras_go_to_clients_that_can_take_over_unheld_tasks() -> None:
    # One task per client; row 0's unheld task can run at once on c only.
    rows = {0: 2}
    weights = {"a": 1, "b": 1, "c": 1}
    bounds = dict.fromkeys(weights, (0, 1))
    cells = row_quotas(rows, weights, bounds, {0: {"a": 1}}, {0: {"c": 1}})
    assert cells == {0: {"a": 1, "b": 0, "c": 1}}


def test_a_client_short_of_its_lower_bound_takes_a_rounded_down_cell() -> None:
    """Stateless tasks of a random convergence cluster (1 in a few thousand): rows of 8 and 4
    over capacities 2, 2, 2, 1, 1, on top of 4, 4, 3, 1, 1 stateful actives. Both capacity-1
    clients need 2 stateless tasks, but row 1 has one extra for them; no extra can be passed
    round, so c0000 gives up a task of its rounded-down cell in row 1 (active spread per unit
    of capacity was 1.5, now within 1)."""
    weights = {"c0000": 2, "c0001": 2, "c0002": 2, "c0003": 1, "c0004": 1}
    bounds = {
        "c0000": (2, 3),
        "c0001": (2, 3),
        "c0002": (3, 4),
        "c0003": (2, 3),
        "c0004": (2, 3),
    }
    held = {
        0: {"c0000": 2, "c0001": 2, "c0002": 2, "c0003": 1, "c0004": 1},
        1: {"c0000": 1, "c0001": 1, "c0002": 1, "c0003": 1},
    }
    cells = row_quotas({0: 8, 1: 4}, weights, bounds, held, {})
    totals = {c: cells[0][c] + cells[1][c] for c in weights}
    assert all(low <= totals[c] <= high for c, (low, high) in bounds.items()), totals
    assert cells[1] == {"c0000": 0, "c0001": 1, "c0002": 1, "c0003": 1, "c0004": 1}


@settings(max_examples=300, deadline=None)
@given(row_layouts(equal=False), st.data())
def test_totals_stay_within_bounds_shifted_by_tasks_placed_before(layout: Layout, data) -> None:
    """As for stateless tasks placed around the stateful actives: each client's bounds are its
    share of all tasks minus what it runs already."""
    rows, weights, held = layout
    placed = {c: data.draw(st.integers(0, 6)) for c in weights}
    total = sum(rows.values()) + sum(placed.values())
    lower = {c: max(n, 1) for c, n in placed.items()}
    if total < len(weights) or sum(lower.values()) > total:
        lower = placed
    shares = share_ranges(total, weights, lower=lower)
    bounds = {c: (low - placed[c], high - placed[c]) for c, (low, high) in shares.items()}
    cells = row_quotas(rows, weights, bounds, held, {})
    for row, size in rows.items():
        assert sum(cells[row].values()) == size
    for client, (low, high) in bounds.items():
        assert low <= sum(cells[row][client] for row in rows) <= high, (client, cells)
