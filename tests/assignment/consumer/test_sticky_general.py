"""The general (heterogeneous subscriptions) path of `sticky`, on partition numbers."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.sticky.general import general_assign


def ranges(*counts: int) -> list[range]:
    starts = list(itertools.accumulate(counts, initial=0))
    return [range(a, b) for a, b in itertools.pairwise(starts)]


def balanced(result: list[list[int]], topic_of: dict[int, int], topics: list[list[int]]) -> bool:
    loads = [len(r) for r in result]
    return all(
        topic_of[p] not in topics[a]
        for a, b in itertools.permutations(range(len(result)), 2)
        if loads[a] <= loads[b] - 2
        for p in result[b]
    )


def test_partitions_of_the_most_constrained_topics_are_placed_first() -> None:
    # KIP-54's example 2: t0 (1 partition), t1 (2), t2 (3); C0: t0; C1: t0, t1; C2: all.
    assert general_assign(ranges(1, 2, 3), [[0], [0, 1], [0, 1, 2]], [[], [], []]) == [
        [0],
        [1, 2],
        [3, 4, 5],
    ]


def test_balance_comes_first_then_the_fewest_owned_partitions_move() -> None:
    """A member left behind t1's partitions 4 and 7. Shuffling new partitions alone leaves loads
    2, 2, 1, 3 (KIP-54-balanced: m2 consumes only t0, m3 holds only t1), but loads of 2 each
    are reachable: m1's owned t0 partition 3 goes to m2 and m1 takes 7, one owned partition
    moved, the fewest that balance allows."""
    topics = ranges(4, 4)  # t0: 0-3, t1: 4-7
    member_topics = [[0], [0, 1], [0], [0, 1]]
    owned = [[0, 2], [3, 5], [1], [6]]
    result = general_assign(topics, member_topics, owned)
    assert result == [[0, 2], [5, 7], [1, 3], [4, 6]]


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[range], list[list[int]], list[list[int]]]:
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    topics = ranges(*counts)
    members = draw(st.integers(1, 6))
    member_topics = [
        sorted(draw(st.sets(st.integers(0, len(counts) - 1), min_size=1))) for _ in range(members)
    ]
    owned: list[list[int]] = [[] for _ in range(members)]
    for t, numbers in enumerate(topics):
        eligible = [m for m in range(members) if t in member_topics[m]]
        for p in numbers:
            if eligible and draw(st.booleans()):
                owned[draw(st.sampled_from(eligible))].append(p)
    return topics, member_topics, owned


@given(cases())
def test_valid_balanced_and_stable(case) -> None:
    topics, member_topics, owned = case
    result = general_assign(topics, member_topics, owned)
    topic_of = {p: t for t, r in enumerate(topics) for p in r}
    consumed = {p for t, r in enumerate(topics) if any(t in ts for ts in member_topics) for p in r}
    assert sorted(p for r in result for p in r) == sorted(consumed)
    assert all(topic_of[p] in member_topics[m] for m, r in enumerate(result) for p in r)
    assert balanced(result, topic_of, member_topics)
    assert general_assign(topics, member_topics, result) == result
