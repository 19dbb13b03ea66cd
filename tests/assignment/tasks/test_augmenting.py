"""Augmenting paths: re-route earlier picks so that one more row gets a column."""

from __future__ import annotations

from streamjoin.assignment.tasks.augmenting import augment


def test_an_earlier_pick_moves_aside_to_make_room() -> None:
    # A holds x; B may only use x; y has room but only A may use it.
    allowed = {("A", "x"), ("A", "y"), ("B", "x")}
    picks = {"A": ["x"], "B": []}
    holders = {"x": ["A"], "y": []}
    spare = {"x": 0, "y": 1}
    end = augment(
        "B",
        ["x", "y"],
        picks=picks,
        holders=holders,
        spare=spare,
        allowed=lambda r, c: (r, c) in allowed,
    )
    assert end == "y"
    assert picks == {"A": ["y"], "B": ["x"]}
    assert holders == {"x": ["B"], "y": ["A"]}
    assert spare == {"x": 0, "y": 0}


def test_a_direct_pick_needs_no_path() -> None:
    picks: dict[str, list[str]] = {"A": []}
    holders: dict[str, list[str]] = {"x": []}
    spare = {"x": 2}
    assert (
        augment("A", ["x"], picks=picks, holders=holders, spare=spare, allowed=lambda r, c: True)
        == "x"
    )
    assert picks == {"A": ["x"]} and spare == {"x": 1}


def test_nothing_changes_when_no_path_exists() -> None:
    picks = {"A": ["x"], "B": []}
    holders = {"x": ["A"], "y": []}
    spare = {"x": 0, "y": 1}
    before = (repr(picks), repr(holders), repr(spare))
    end = augment(
        "B", ["x", "y"], picks=picks, holders=holders, spare=spare, allowed=lambda r, c: c == "x"
    )
    assert end is None
    assert (repr(picks), repr(holders), repr(spare)) == before


def test_a_longer_path_is_found() -> None:
    # C needs x; A leaves x for y, B leaves y for z, which has room.
    allowed = {("A", "x"), ("A", "y"), ("B", "y"), ("B", "z"), ("C", "x")}
    picks = {"A": ["x"], "B": ["y"], "C": []}
    holders = {"x": ["A"], "y": ["B"], "z": []}
    spare = {"x": 0, "y": 0, "z": 1}
    end = augment(
        "C",
        ["x", "y", "z"],
        picks=picks,
        holders=holders,
        spare=spare,
        allowed=lambda r, c: (r, c) in allowed,
    )
    assert end == "z"
    assert picks == {"A": ["y"], "B": ["z"], "C": ["x"]}
