"""The rebalance simulation: ideal restores, stopped clients keeping state, move counting."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from streamjoin.assignment.tasks import (
    AssignorSettings,
    ClientAssignment,
    ClientState,
    PendingMove,
    Role,
    TaskAssignment,
    TaskId,
    TaskSpec,
    Warmup,
)
from streamjoin.assignment.tasks.simulation import (
    AssignFunction,
    Cluster,
    NotConvergedError,
    kafka_tasks,
)

T0, T1, T2 = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)
TASKS = [TaskSpec(T0, 500), TaskSpec(T1, 700), TaskSpec(T2)]


def scripted(
    *answers: dict[str, ClientAssignment], followup: bool = False
) -> tuple[AssignFunction, list[list[ClientState]]]:
    """An assign function replaying `answers`, recording the states it was given."""
    seen: list[list[ClientState]] = []
    replies = iter(answers)
    moving = (PendingMove(T0, Role.ACTIVE, "b", "a", Warmup.WAITING),) if followup else ()

    def assign(
        clients: Sequence[ClientState], tasks: Sequence[TaskSpec], settings: AssignorSettings
    ) -> TaskAssignment:
        seen.append(sorted(clients, key=lambda c: c.process_id))
        return TaskAssignment(next(replies), moving)

    return assign, seen


def test_clients_report_full_state_for_everything_they_were_given() -> None:
    assign, seen = scripted(
        {"a": ClientAssignment((T0, T2), (), (T1,))},
        {"a": ClientAssignment((T0, T1, T2))},
    )
    cluster = Cluster(TASKS, AssignorSettings(), assign)
    cluster.add("a")
    cluster.rebalance()
    cluster.rebalance()
    first, second = seen
    assert first == [ClientState("a")]
    assert second == [ClientState("a", 1, frozenset({T0, T2}), frozenset({T1}), {T0: 500, T1: 700})]


def test_a_stopped_client_comes_back_with_its_state_and_moves_are_counted() -> None:
    assign, seen = scripted(
        {"a": ClientAssignment((T0,)), "b": ClientAssignment((T1, T2))},
        {"a": ClientAssignment((T0, T1, T2))},
        {"a": ClientAssignment((T0,)), "b": ClientAssignment((T1, T2))},
    )
    cluster = Cluster(TASKS, AssignorSettings(), assign)
    cluster.add("a")
    cluster.add("b", 3)
    cluster.rebalance()
    cluster.stop("b")
    cluster.rebalance()
    assert cluster.moves == 1  # T1 lost its owner; stateless T2 is not counted
    cluster.add("b")
    cluster.rebalance()
    assert seen[2][1] == ClientState("b", 3, frozenset({T1, T2}), frozenset(), {T1: 700})
    assert cluster.moves == 2
    assert cluster.rebalances == 3


def test_converge_gives_up_after_the_limit() -> None:
    assign, _ = scripted(*[{"a": ClientAssignment()}] * 3, followup=True)
    cluster = Cluster(TASKS, AssignorSettings(), assign)
    cluster.add("a")
    with pytest.raises(NotConvergedError, match="after 3 rebalances"):
        cluster.converge(3)


def test_kafka_layout_puts_stateless_subtopologies_first() -> None:
    specs = kafka_tasks(3, 4, 2, end_offset=9)
    assert [(str(s.task), s.end_offset_sum) for s in specs] == [
        ("0_0", None),
        ("0_1", None),
        ("1_0", None),
        ("2_0", 9),
        ("2_1", 9),
        ("3_0", 9),
        ("3_1", 9),
    ]
