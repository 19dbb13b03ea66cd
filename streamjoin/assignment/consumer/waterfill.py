"""Least-loaded-first hand-out of units (partitions) to members, computed in bulk.

Several assignors hand out partitions one at a time, each to the eligible member with the fewest
so far (ties to the member ranked first). Done literally that is a heap operation per partition;
these helpers give the same sequence from the members' start and end loads alone, with list
repetition and slicing doing the per-partition work in C.

Members are identified by their rank: index 0 wins ties against index 1, and so on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import MutableSequence, Sequence
from itertools import pairwise
from typing import TypeVar

__all__ = ("deal", "fill_order", "fill_rounds", "water_caps")

T = TypeVar("T")


def fill_rounds(loads: Sequence[int], caps: Sequence[int]) -> list[tuple[list[int], int]]:
    """`fill_order` as runs of rounds: `(members, rounds)` gives each of `members` one unit,
    in rank order, `rounds` times over."""
    entering: defaultdict[int, list[int]] = defaultdict(list)
    changes: set[int] = set()
    for member, (load, cap) in enumerate(zip(loads, caps, strict=True)):
        if cap > load:
            entering[load].append(member)
            changes.add(load)
            changes.add(cap)
    runs: list[tuple[list[int], int]] = []
    active: list[int] = []
    for level, next_level in pairwise(sorted(changes)):
        active = [m for m in active if caps[m] > level]
        if level in entering:
            active = sorted(active + entering[level])
        runs.append((active, next_level - level))
    return runs


def fill_order(loads: Sequence[int], caps: Sequence[int]) -> list[int]:
    """The order in which members receive units when each goes from `loads[i]` to `caps[i]`.

    Units go level by level (a member at load L receives its next unit before any member at
    L+1), and within a level in rank order: exactly the sequence a least-loaded-first greedy
    produces when it stops each member at its cap.
    """
    order: list[int] = []
    for members, rounds in fill_rounds(loads, caps):
        order.extend(members * rounds)
    return order


def deal(
    units: Sequence[T],
    loads: Sequence[int],
    caps: Sequence[int],
    into: Sequence[MutableSequence[T]],
) -> None:
    """Append `units[k]` to `into[fill_order(loads, caps)[k]]` for every k, a slice at a time.

    A run of rounds hands each of its members every `len(members)`-th unit of the run: one
    slice per member and run instead of a step per unit (100,000 of them in a fresh group).
    """
    start = 0
    for members, rounds in fill_rounds(loads, caps):
        width = len(members)
        end = start + width * rounds
        for offset, member in enumerate(members, start):
            into[member].extend(units[offset:end:width])
        start = end
    if start != len(units):
        raise ValueError(f"{len(units)} units for {start} places")


def water_caps(loads: Sequence[int], units: int) -> list[int]:
    """End loads after handing out `units` one at a time to the least-loaded member.

    Pair with `fill_order(loads, water_caps(loads, units))` for the order itself.
    """
    if not loads:
        if units:
            raise ValueError("cannot hand out units to no members")
        return []
    ranked = sorted(range(len(loads)), key=loads.__getitem__)
    level = loads[ranked[0]]
    remaining = units
    below = 0  # members whose load is at most `level`
    while True:
        while below < len(ranked) and loads[ranked[below]] <= level:
            below += 1
        next_level = loads[ranked[below]] if below < len(ranked) else None
        if next_level is not None and below * (next_level - level) <= remaining:
            remaining -= below * (next_level - level)
            level = next_level
            continue
        level += remaining // below
        remaining %= below
        break
    caps = [max(load, level) for load in loads]
    for member in range(len(loads)):
        if remaining == 0:
            break
        if loads[member] <= level:
            caps[member] += 1
            remaining -= 1
    return caps
