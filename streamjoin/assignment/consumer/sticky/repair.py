"""Restoring balance by shuffling new partitions only, before giving up a previously owned one.

When member `high` holds a previously owned partition that member `low`, with exactly two fewer
partitions, could take, moving that partition costs stickiness. A chain of moves of partitions
handed out in this rebalance often does as well: `high` passes a new partition along members
that can consume it to a member with at most as many partitions as `high`, or a chain of such
moves ends at `low`. Example: `high` passes a new partition to a member whose partitions `low`
cannot consume; that member now holds more, but nobody can take any of it. A chain is taken only
if it ends the imbalance without starting another one, so it lowers the number of unbalanced
pairs (though it may make the loads less even, which KIP-54's definition allows).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamjoin.assignment.consumer.sticky.state import BalanceState

__all__ = ("repair",)

_MAX_CHAINS = 16
"""Chains tried per direction, shortest first: bounds the work in large groups."""

Chain = list[tuple[int, int, int]]
"""(giver, taker, topic) moves of one new partition each."""


def repair(state: BalanceState, high: int, low: int) -> bool:
    """End `high`'s imbalance against `low` (two apart) with a chain; False if none does."""
    loads = state.loads
    chains = sorted(
        [
            *_chains_from(state, high, lambda m: loads[m] <= loads[high]),
            *_chains_into(state, low, lambda m: loads[m] >= loads[low]),
        ],
        key=lambda chain: (len(chain), chain),
    )
    for chain in chains:
        members = {m for giver, taker, _ in chain for m in (giver, taker)}
        if _hopeless(state, chain, members):
            continue
        for giver, taker, topic in chain:
            state.shift(giver, taker, topic, new_only=True)
        state.reindex(members)
        # Only the chain's start lost a partition; every other member on it gained one or
        # swapped one for another topic's, so only they can become someone's unbalanced peer.
        start = chain[0][0]
        if not state.underloaded(start) and not any(state.overloaded(t) for _, t, _ in chain):
            return True
        for giver, taker, topic in reversed(chain):
            state.shift(taker, giver, topic, new_only=True)
        state.reindex(members)
    return False


def _hopeless(state: BalanceState, chain: Chain, members: set[int]) -> bool:
    """A cheap look at the current loads that rejects most chains `repair` would undo anyway.

    Loads on the chain only rise at its end and only fall at its start, so each test here
    implies the corresponding test after the chain: the end (one more partition) holds a topic
    that a member with two fewer consumes, a member receives a topic that a member two below
    it consumes, or the start (one fewer) is two below a holder of one of its topics.
    """
    loads = state.loads
    end = chain[-1][1]
    for _, taker, topic in chain:
        if taker == end:
            limit = loads[end] + 1 - 2
            topics = [*state.held[end], topic]
        else:
            limit = loads[taker] - 2
            topics = [topic]
        if any(loads[state.least_loaded(t)] <= limit for t in topics):
            return True
    start = chain[0][0]
    for topic in state.member_topics[start]:
        holder = state.most_loaded_holder(topic)
        if holder is not None and holder not in members and loads[holder] >= loads[start] + 1:
            return True
    return False


def _search(
    origin: int, neighbours: Callable[[int], Iterable[tuple[int, int]]]
) -> Iterator[tuple[int, Chain]]:
    """Members reachable from `origin`, nearest first, each with the (from, to, topic) edges of
    the search tree that lead to it from `origin`. Lazy: callers stop when they have enough."""
    parent: dict[int, tuple[int, int] | None] = {origin: None}
    queue = deque([origin])
    while queue:
        node = queue.popleft()
        for other, topic in neighbours(node):
            if other in parent:
                continue
            parent[other] = (node, topic)
            queue.append(other)
            edges: Chain = []
            walker = other
            while (step := parent[walker]) is not None:
                edges.append((step[0], walker, step[1]))
                walker = step[0]
            yield other, edges[::-1]


def _chains_from(state: BalanceState, start: int, accept: Callable[[int], bool]) -> list[Chain]:
    """Shortest chains of new-partition moves from `start` to members `accept` likes."""

    def takers(giver: int) -> Iterator[tuple[int, int]]:
        for topic in sorted(t for t, (_, new) in state.held[giver].items() if new):
            for taker in state.subscribers[topic]:
                yield taker, topic

    found = (edges for member, edges in _search(start, takers) if accept(member))
    return list(islice(found, _MAX_CHAINS))


def _chains_into(state: BalanceState, end: int, accept: Callable[[int], bool]) -> list[Chain]:
    """Shortest chains of new-partition moves into `end` from members `accept` likes."""

    def givers(taker: int) -> Iterator[tuple[int, int]]:
        for topic in state.member_topics[taker]:
            for giver in sorted(state.new_holders[topic]):
                yield giver, topic

    found = (edges for member, edges in _search(end, givers) if accept(member))
    # The search ran against the moves: turn its edges around into moves ending at `end`.
    return [[(b, a, t) for a, b, t in reversed(edges)] for edges in islice(found, _MAX_CHAINS)]
