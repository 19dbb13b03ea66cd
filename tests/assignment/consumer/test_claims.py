from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.claims import resolve_claims


def test_disjoint_claims_are_kept_sorted() -> None:
    assert resolve_claims([([3, 1], 5), ([2], -1), ([], 0)]) == [[1, 3], [2], []]


def test_higher_generation_wins_a_conflict() -> None:
    # A zombie (generation 3) still claims 0 and 1, which member 1 owns since generation 4.
    assert resolve_claims([([0, 1, 2], 3), ([0, 1], 4)]) == [[2], [0, 1]]


def test_a_tie_at_the_highest_generation_leaves_the_partition_unowned() -> None:
    assert resolve_claims([([0, 1], 4), ([1, 2], 4), ([1], 2)]) == [[0], [2], []]


def test_a_higher_claim_breaks_an_earlier_tie() -> None:
    assert resolve_claims([([1], 4), ([1], 4), ([1], 5)]) == [[], [], [1]]


def test_a_member_repeating_its_own_claim_is_no_conflict() -> None:
    assert resolve_claims([([1, 1, 2], 0), ([3], 0)]) == [[1, 2], [3]]


@given(st.lists(st.tuples(st.lists(st.integers(0, 9), max_size=6), st.integers(-1, 3)), max_size=5))
def test_resolution_matches_its_definition(claims: list[tuple[list[int], int]]) -> None:
    kept = resolve_claims(claims)
    for member, numbers in enumerate(kept):
        assert numbers == sorted(set(numbers))
        for number in numbers:
            generation = claims[member][1]
            rivals = [g for m, (nums, g) in enumerate(claims) if m != member and number in nums]
            assert all(g < generation for g in rivals)
    everyone = {n for nums, _ in claims for n in nums}
    for number in everyone - {n for numbers in kept for n in numbers}:
        best = max(g for nums, g in claims if number in nums)
        assert sum(1 for nums, g in claims if number in nums and g == best) >= 2
