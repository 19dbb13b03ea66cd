"""Sticky assignment for members with different subscriptions (KIP-54's algorithm).

1. Every member keeps what it owned (the caller has already dropped invalid claims).
2. Unowned partitions go, topic by topic starting with the topics fewest members can consume, each
   to the least-loaded member that can consume it.
3. While some member holds a partition that a member with at least two fewer partitions could
   consume, partitions move (see `balance`), previously owned ones only when moving
   partitions handed out in this rebalance cannot restore balance.
4. Chains of moves narrow the spread to the least possible, and within it the assignment is made
   the stickiest possible (see `optimal`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

from streamjoin.assignment.consumer.sticky.balance import balance
from streamjoin.assignment.consumer.sticky.optimal import optimize
from streamjoin.assignment.consumer.sticky.state import BalanceState, Holding
from streamjoin.assignment.consumer.waterfill import fill_order, water_caps

__all__ = ("general_assign",)


def general_assign(
    topic_ranges: Sequence[range],
    member_topics: Sequence[Sequence[int]],
    owned: Sequence[Sequence[int]],
) -> list[list[int]]:
    """Assign partition numbers to members, each consuming only its topics.

    Partitions are numbered 0..N-1 topic after topic: `topic_ranges[t]` is topic t's
    contiguous range of numbers. `member_topics[i]` holds the topics member i subscribes to,
    `owned[i]` the partitions it keeps from before (valid and disjoint). Members are in rank
    order (ties go to the lower index). Returns each member's partitions, ascending.
    """
    subscribers: list[list[int]] = [[] for _ in topic_ranges]
    for member, topics in enumerate(member_topics):
        for topic in topics:
            subscribers[topic].append(member)
    topic_at = [t for t, numbers in enumerate(topic_ranges) for _ in numbers]
    held: list[dict[int, Holding]] = [{} for _ in member_topics]
    loads = [len(numbers) for numbers in owned]
    taken = bytearray(len(topic_at))
    for member, numbers in enumerate(owned):
        holdings = held[member]
        for number in numbers:
            taken[number] = 1
            holdings.setdefault(topic_at[number], ([], []))[0].append(number)

    constrained_first = sorted(
        (t for t, members in enumerate(subscribers) if members),
        key=lambda t: (len(subscribers[t]), t),
    )
    for topic in constrained_first:
        orphans = [n for n in topic_ranges[topic] if not taken[n]]
        if not orphans:
            continue
        members = subscribers[topic]
        start = [loads[m] for m in members]
        caps = water_caps(start, len(orphans))
        for number, position in zip(orphans, fill_order(start, caps), strict=True):
            held[members[position]].setdefault(topic, ([], []))[1].append(number)
        for member, cap in zip(members, caps, strict=True):
            loads[member] = cap

    balance(BalanceState(member_topics, subscribers, held, loads))
    assigned = [sorted(chain.from_iterable(k + new for k, new in h.values())) for h in held]
    return optimize(topic_ranges, topic_at, member_topics, owned, assigned)
