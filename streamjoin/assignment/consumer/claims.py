"""Who owned what before this rebalance, when members' reports disagree (KIP-341).

Each member reports the partitions it owned and the generation (or epoch) of that ownership. A
member that missed a rebalance still reports its old partitions, so a partition can be claimed
twice: the claim from the higher generation is the true one. Two claims from the same generation
cannot both be true and neither can be trusted, so such a partition counts as owned by nobody.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

__all__ = ("resolve_claims",)

logger = logging.getLogger(__name__)


def resolve_claims(claims: Sequence[tuple[Sequence[int], int]]) -> list[list[int]]:
    """Per member, the claimed numbers it keeps as previous owner, ascending.

    `claims[i]` is member i's `(numbers, generation)`; a number may repeat within one claim.
    """
    total = sum(len(numbers) for numbers, _ in claims)
    union: set[int] = set().union(*(numbers for numbers, _ in claims))
    if len(union) == total:  # nothing claimed twice: the common case, kept cheap
        return [sorted(numbers) for numbers, _ in claims]
    best: dict[int, tuple[int, int]] = {}  # number -> (generation, member)
    tied: set[int] = set()
    for member, (numbers, generation) in enumerate(claims):
        for number in set(numbers):
            current = best.get(number)
            if current is None or generation > current[0]:
                best[number] = (generation, member)
                tied.discard(number)
            elif generation == current[0]:
                tied.add(number)
    if tied:
        logger.warning(
            "%d partition(s) claimed by two members of the same generation; "
            "treating them as unowned",
            len(tied),
        )
    kept: list[list[int]] = [[] for _ in claims]
    for number, (_, member) in best.items():
        if number not in tied:
            kept[member].append(number)
    for numbers in kept:
        numbers.sort()
    return kept
