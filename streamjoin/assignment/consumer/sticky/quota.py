"""Sticky assignment when every member subscribes to the same topics: quotas, no search.

With identical subscriptions the most balanced assignment is known up front: with N partitions
and M members everybody gets N // M, and N % M members get one more. The stickiest such
assignment lets every member keep as much of what it owned as its quota allows, and gives the
extra slots to members that owned more than N // M first (the same idea as Kafka's constrained
assignor, KAFKA-9987). What is left is handed out least-loaded first, like KIP-54's step 2.
Everything is list work on partition numbers, linear in N.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

from streamjoin.assignment.consumer.waterfill import deal

__all__ = ("fresh_numbers", "quota_assign")


_FREE = bytes(range(256)).replace(b"\x00\x01", b"\x01\x00", 1)
"""Byte translation table that swaps 0 and 1: turns "owned" flags into "free" flags."""


def quota_assign(total: int, owned: Sequence[Sequence[int]]) -> list[list[int]]:
    """Assign partitions 0..total-1 to members that may all consume every one of them.

    `owned[i]` is member i's previously owned partitions: valid, ascending and disjoint from the
    other members'. Members are in rank order (ties go to the lower index). Returns each
    member's partitions, previously owned ones first.
    """
    members = len(owned)
    quota, extra = divmod(total, members)
    caps = [quota] * members
    for member in range(members):
        if extra and len(owned[member]) > quota:
            caps[member] += 1
            extra -= 1
    for member in range(members):
        if not extra:
            break
        if caps[member] == quota:
            caps[member] += 1
            extra -= 1
    kept = [list(numbers[:cap]) for numbers, cap in zip(owned, caps, strict=True)]
    taken = bytearray(total)
    for numbers in kept:
        for number in numbers:
            taken[number] = 1
    free = list(compress(range(total), taken.translate(_FREE)))
    deal(free, [len(numbers) for numbers in kept], caps, kept)
    return kept


def fresh_numbers(total: int, members: int) -> list[Sequence[int]]:
    """`quota_assign(total, [[]] * members)`, for a group in which nobody owns anything, dealt
    as ranges: member i gets every `members`-th number from i on, and one of the remainder if i
    is among the first `total % members` (its share is then a list). No per-partition step and
    no number made but the remainder's: a fresh group's first rebalance is the leader's cold
    path."""
    quota = total // members
    full = quota * members
    return [
        range(i, full, members) if full + i >= total else [*range(i, full, members), full + i]
        for i in range(members)
    ]
