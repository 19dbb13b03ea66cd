"""Re-route earlier picks so that one more can be made: augmenting paths in a b-matching.

Rows (tasks, subtopologies) pick distinct columns (clients) that have spare room. A greedy that
prefers sticky picks can leave a row with nothing allowed that still has room; an alternating
path then moves earlier picks aside (row B leaves column X for column Y, so row A can take X)
until it ends at a column with room. When a complete assignment exists one is always found.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, MutableMapping, Sequence
from typing import TypeVar

__all__ = ("augment",)

R = TypeVar("R", bound=Hashable)
C = TypeVar("C", bound=Hashable)


def augment(
    row: R,
    columns: Sequence[C],
    *,
    picks: MutableMapping[R, list[C]],
    holders: MutableMapping[C, list[R]],
    spare: MutableMapping[C, int],
    allowed: Callable[[R, C], bool],
) -> C | None:
    """Give `row` one more column, moving other rows' picks along the shortest path that works.

    `picks` (row -> its columns) and `holders` (column -> rows that picked it) are updated in
    place, as is `spare`. Returns the column at the end of the path, the one whose room was
    used, or None (nothing changes) if no alternating path ends at a column with room.
    """
    unvisited = list(columns)
    parent: dict[C, tuple[R, C | None]] = {}
    queue: deque[C] = deque()

    def reach(from_row: R, via: C | None) -> C | None:
        nonlocal unvisited
        taken = picks.get(from_row, [])
        still: list[C] = []
        found: C | None = None
        for column in unvisited:
            if found is None and column not in taken and allowed(from_row, column):
                parent[column] = (from_row, via)
                if spare.get(column, 0) > 0:
                    found = column
                else:
                    queue.append(column)
            else:
                still.append(column)
        unvisited = still
        return found

    end = reach(row, None)
    while end is None and queue:
        column = queue.popleft()
        for other in list(holders.get(column, [])):
            end = reach(other, column)
            if end is not None:
                break
    if end is None:
        return None
    spare[end] -= 1
    column = end
    while True:
        mover, left = parent[column]
        picks.setdefault(mover, []).append(column)
        holders.setdefault(column, []).append(mover)
        if left is None:
            return end
        picks[mover].remove(left)
        holders[left].remove(mover)
        column = left
