"""Step 3 of the general sticky path: make the assignment balanced as KIP-54 defines it.

KIP-54 calls an assignment balanced when no partition can move from its member to a member that
could consume it and holds two or more fewer partitions. Such a move is what the loop makes
while one exists; it moves a partition handed out in this rebalance ("new") when it can, and
otherwise first tries `repair`, which shuffles new partitions only, so that a previously
owned partition moves only when no such shuffle restores balance. Each plain move lowers the sum
of squared loads; repairs may raise it a little (they trade evenness for stickiness, within the
definition), so their number is capped, which bounds the loop. It ends exactly when the
assignment is balanced.
"""

from __future__ import annotations

from streamjoin.assignment.consumer.sticky.repair import repair
from streamjoin.assignment.consumer.sticky.state import BalanceState

__all__ = ("balance",)


def _best_move(state: BalanceState, giver: int) -> tuple[int, int, bool] | None:
    """(topic, taker, moves a new partition) of the move that suits `giver` best, if any."""
    limit = state.loads[giver] - 2
    best: tuple[tuple[bool, int, int, int], int, int, bool] | None = None
    for topic, (_, new) in state.held[giver].items():
        taker = state.least_loaded(topic)
        if state.loads[taker] <= limit:
            key = (not new, state.loads[taker], taker, topic)
            if best is None or key < best[0]:
                best = (key, topic, taker, bool(new))
    return None if best is None else best[1:]


def balance(state: BalanceState) -> None:
    """Move partitions until the assignment is balanced; see the module docstring.

    Each pass lets every member with a move make one, most loaded first, so partitions leave
    the most loaded members rather than whichever member happens to be looked at first.
    """
    loads = state.loads
    repairs_left = len(loads) + sum(len(new) for h in state.held for _, new in h.values())
    progressed = True
    while progressed:
        progressed = False
        for giver in sorted(range(len(loads)), key=lambda m: (-loads[m], m)):
            move = _best_move(state, giver)
            if move is None:
                continue
            topic, taker, free = move
            # A chain of new partitions can only end this imbalance if it is off by exactly two.
            gap = loads[giver] - loads[taker]
            if not free and gap == 2 and repairs_left and repair(state, giver, taker):
                repairs_left -= 1
            else:
                state.shift(giver, taker, topic)
                state.reindex((giver, taker))
            progressed = True
