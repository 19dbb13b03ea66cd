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
from typing import TypeVar

from streamjoin.assignment.consumer.waterfill import deal

__all__ = ("fresh_quota", "quota_assign")

T = TypeVar("T")

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


def fresh_quota(units: tuple[T, ...], members: int) -> list[tuple[T, ...]]:
    """`quota_assign` for a group in which nobody owns anything, dealt out as `units` themselves.

    The result is `quota_assign(len(units), [[]] * members)` with each number `k` replaced by
    `units[k]`: member i gets every `members`-th unit from i on, and one of the remainder if i is
    among the first `len(units) % members`. Two tuple slices per member, no per-unit step and no
    partition number created: a fresh group's first rebalance is the leader's cold path.
    """
    quota = len(units) // members
    full = quota * members
    return [units[i:full:members] + units[full + i : full + i + 1] for i in range(members)]
