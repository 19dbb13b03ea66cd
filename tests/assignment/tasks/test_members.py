"""Spreading one client's tasks over its members: exact, balanced by capacity, sticky."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamjoin.assignment.tasks.members import Member, spread_over_members
from streamjoin.assignment.tasks.model import ClientAssignment, TaskId

TASKS = [TaskId(s, p) for s in range(2) for p in range(12)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClientAssignment, list[Member]]:
    tasks = draw(st.permutations(TASKS))
    a, s, le = draw(st.integers(0, 24)), draw(st.integers(0, 12)), draw(st.integers(0, 4))
    a = min(a, len(tasks))
    roles = ClientAssignment(
        tuple(sorted(tasks[:a])),
        tuple(sorted(tasks[a : a + s])),
        tuple(sorted(tasks[a + s : a + s + le])),
    )
    count = draw(st.integers(1, 5))
    equal = draw(st.booleans())
    owner = draw(st.lists(st.integers(-1, count - 1), min_size=len(TASKS), max_size=len(TASKS)))
    mirror = draw(st.lists(st.integers(-1, count - 1), min_size=len(TASKS), max_size=len(TASKS)))
    members = []
    for i in range(count):
        active = {t for t, o in zip(TASKS, owner, strict=True) if o == i}
        standby = {t for t, o in zip(TASKS, mirror, strict=True) if o == i} - active
        capacity = 1 if equal else draw(st.integers(1, 4))
        members.append(Member(f"m{i}", capacity, frozenset(active), frozenset(standby)))
    return roles, members


@given(cases())
def test_every_task_lands_on_exactly_one_member_in_its_role(
    case: tuple[ClientAssignment, list[Member]],
) -> None:
    roles, members = case
    spread = spread_over_members(roles, members)
    assert sorted(spread) == sorted(m.name for m in members)
    for field in ("active", "standby", "learner"):
        got = sorted(t for r in spread.values() for t in getattr(r, field))
        assert got == sorted(getattr(roles, field))


@given(cases())
def test_actives_follow_capacity_within_one_task(
    case: tuple[ClientAssignment, list[Member]],
) -> None:
    roles, members = case
    spread = spread_over_members(roles, members)
    capacity = sum(m.capacity for m in members)
    for m in members:
        fair = len(roles.active) * m.capacity / capacity
        assert abs(len(spread[m.name].active) - fair) < 1


@given(cases())
def test_members_of_equal_capacity_carry_loads_within_one_of_each_other(
    case: tuple[ClientAssignment, list[Member]],
) -> None:
    roles, members = case
    if len({m.capacity for m in members}) > 1:
        return
    loads = [
        sum(map(len, (r.active, r.standby, r.learner)))
        for r in spread_over_members(roles, members).values()
    ]
    assert max(loads) - min(loads) <= 1


@given(cases())
def test_a_member_keeps_its_previous_actives_up_to_its_share(
    case: tuple[ClientAssignment, list[Member]],
) -> None:
    roles, members = case
    spread = spread_over_members(roles, members)
    for m in members:
        kept = m.previous_active & set(spread[m.name].active)
        held = m.previous_active & set(roles.active)
        assert len(kept) == min(len(held), len(spread[m.name].active))


@given(cases())
def test_spreading_again_with_what_each_member_got_changes_nothing(
    case: tuple[ClientAssignment, list[Member]],
) -> None:
    roles, members = case
    first = spread_over_members(roles, members)
    again = [
        Member(
            m.name,
            m.capacity,
            frozenset(first[m.name].active),
            frozenset(first[m.name].standby + first[m.name].learner),
        )
        for m in members
    ]
    assert spread_over_members(roles, again) == first


def test_a_promoted_learner_stays_on_the_member_that_restored_it() -> None:
    task = TaskId(0, 3)
    members = [Member("a"), Member("b", previous_standby=frozenset({task}))]
    spread = spread_over_members(ClientAssignment(active=(TaskId(0, 1), task)), members)
    assert spread["b"].active == (task,)
    assert spread["a"].active == (TaskId(0, 1),)
