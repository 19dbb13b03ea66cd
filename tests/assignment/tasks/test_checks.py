"""Validity problems and balance spreads of an assignment."""

from __future__ import annotations

from streamjoin.assignment.tasks import (
    AssignorSettings,
    ClientAssignment,
    TaskAssignment,
    TaskId,
    TaskSpec,
)
from streamjoin.assignment.tasks.checks import problems, spreads

S0, S1, L0 = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)
TASKS = [TaskSpec(S0, 10), TaskSpec(S1, 10), TaskSpec(L0)]
ONE_STANDBY = AssignorSettings(num_standby_replicas=1, max_warmup_replicas=1)


def assignment(**clients: ClientAssignment) -> TaskAssignment:
    return TaskAssignment(clients)


def test_a_valid_assignment_with_one_learner() -> None:
    valid = assignment(
        a=ClientAssignment((S0, L0), (S1,)),
        b=ClientAssignment((S1,), (S0,)),
        c=ClientAssignment((), (), (S0,)),
    )
    assert problems(valid, TASKS, ONE_STANDBY) == []


def test_each_kind_of_invalidity_is_named() -> None:
    broken = assignment(
        a=ClientAssignment((S0, S0), (L0,)),
        b=ClientAssignment((), (S1, TaskId(7, 7))),
        c=ClientAssignment((), (), (S1,)),
        d=ClientAssignment((), (S1,)),
    )
    found = problems(broken, TASKS, AssignorSettings(max_warmup_replicas=1))
    assert "a holds 2 copies of 0_0" in found
    assert "0_0 is active on 2 clients" in found
    assert "a mirrors stateless task 1_0" in found
    assert "b holds unknown task 7_7" in found
    assert "0_1 is active on 0 clients" in found
    assert "1_0 is active on 0 clients" in found
    assert "0_1 has 3 copies, expected 1" in found


def test_learners_beyond_the_budget_are_reported() -> None:
    too_many = assignment(
        a=ClientAssignment((S0, S1, L0)),
        b=ClientAssignment((), (), (S0,)),
        c=ClientAssignment((), (), (S1,)),
    )
    assert problems(too_many, TASKS, AssignorSettings(max_warmup_replicas=1)) == [
        "2 learners (2 tasks with an extra copy), at most 1 allowed"
    ]


def test_spreads_are_per_unit_of_capacity() -> None:
    layout = assignment(a=ClientAssignment((S0, S1, L0)), b=ClientAssignment((), (S0,)))
    spread = spreads(layout, TASKS, {"a": 3, "b": 1})
    assert spread.active == 1.0  # 3/3 against 0/1
    assert spread.stateful == 1 - 2 / 3  # 2/3 against 1/1
    assert spread.subtopology == 2 / 3  # subtopology 0: 2/3 against 0
    assert spread.balanced()
    assert not spreads(layout, TASKS, {"a": 1, "b": 1}).balanced()
