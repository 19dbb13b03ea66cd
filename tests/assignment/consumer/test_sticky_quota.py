from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.consumer.sticky.quota import fresh_numbers, quota_assign


def test_fresh_assignment_deals_partitions_round_robin() -> None:
    assert quota_assign(8, [[], [], []]) == [[0, 3, 6], [1, 4, 7], [2, 5]]


def test_extra_slots_go_to_members_that_owned_more_than_the_quota() -> None:
    # 7 partitions, 3 members: quotas 3, 2, 2; m2 owned 3, so it keeps them all.
    assert quota_assign(7, [[0], [1, 2], [3, 4, 5]]) == [[0, 6], [1, 2], [3, 4, 5]]


def test_over_quota_partitions_are_handed_to_the_least_loaded_first() -> None:
    # m0 owned everything; m1 and m2 are new: m0 keeps its first two.
    assert quota_assign(6, [[0, 1, 2, 3, 4, 5], [], []]) == [[0, 1], [2, 4], [3, 5]]


@st.composite
def ownership(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    total = draw(st.integers(0, 40))
    members = draw(st.integers(1, 7))
    owner = [draw(st.integers(-1, members - 1)) for _ in range(total)]
    return total, [[p for p in range(total) if owner[p] == m] for m in range(members)]


@given(ownership())
def test_balanced_and_keeps_the_most_possible(case: tuple[int, list[list[int]]]) -> None:
    total, owned = case
    result = quota_assign(total, owned)
    assert sorted(p for numbers in result for p in numbers) == list(range(total))
    sizes = [len(numbers) for numbers in result]
    assert max(sizes) - min(sizes) <= 1
    quota, extra = divmod(total, len(owned))
    kept = sum(len(set(o) & set(r)) for o, r in zip(owned, result, strict=True))
    over = sum(1 for o in owned if len(o) > quota)
    assert kept == sum(min(len(o), quota) for o in owned) + min(extra, over)


@given(ownership())
def test_its_own_result_comes_back_unchanged(case: tuple[int, list[list[int]]]) -> None:
    total, owned = case
    first = [sorted(numbers) for numbers in quota_assign(total, owned)]
    assert [sorted(numbers) for numbers in quota_assign(total, first)] == first


@given(st.integers(0, 60), st.integers(1, 9))
def test_a_fresh_deal_is_the_quota_assignment_of_a_group_that_owns_nothing(
    total: int, members: int
) -> None:
    expected = quota_assign(total, [[]] * members)
    assert [list(numbers) for numbers in fresh_numbers(total, members)] == expected
