"""The assignor's input and output types: parsing, ordering and validation."""

from __future__ import annotations

import pytest

from streamjoin.assignment.tasks import (
    RUNNING_ACTIVE,
    AssignorSettings,
    ClientState,
    PendingMove,
    Role,
    TaskAssignment,
    TaskId,
    TaskSpec,
    Warmup,
)
from streamjoin.errors import ConfigurationError


def test_task_ids_parse_print_and_sort_numerically() -> None:
    assert TaskId.parse("0_3") == TaskId(0, 3)
    assert str(TaskId(12, 7)) == "12_7"
    assert sorted(TaskId.parse(t) for t in ("1_0", "0_10", "0_9")) == [
        TaskId(0, 9),
        TaskId(0, 10),
        TaskId(1, 0),
    ]


@pytest.mark.parametrize("text", ["0-3", "a_1", "-1_2", "1_", "1_2_3", " 0_1"])
def test_malformed_task_ids_are_refused(text: str) -> None:
    with pytest.raises(ConfigurationError, match="<subtopology>_<partition>"):
        TaskId.parse(text)


def test_a_task_is_stateful_when_it_has_a_changelog() -> None:
    assert TaskSpec(TaskId(0, 0), 0).stateful
    assert not TaskSpec(TaskId(0, 0)).stateful
    with pytest.raises(ConfigurationError, match="negative"):
        TaskSpec(TaskId(0, 0), -1)


def test_client_state_is_validated() -> None:
    task = TaskId(0, 0)
    assert ClientState("c", offset_sums={task: RUNNING_ACTIVE}).offset_sums[task] == -2
    with pytest.raises(ConfigurationError, match="capacity 0"):
        ClientState("c", 0)
    with pytest.raises(ConfigurationError, match="both a previous active and a previous standby"):
        ClientState("c", 1, frozenset([task]), frozenset([task]))
    with pytest.raises(ConfigurationError, match="offset sum -1"):
        ClientState("c", offset_sums={task: -1})


def test_settings_default_to_kafka_streams_and_are_validated() -> None:
    assert AssignorSettings() == AssignorSettings(10_000, 2, 0)
    with pytest.raises(ConfigurationError, match="acceptable_recovery_lag"):
        AssignorSettings(acceptable_recovery_lag=-1)
    with pytest.raises(ConfigurationError, match="max_warmup_replicas 0"):
        AssignorSettings(max_warmup_replicas=0)
    with pytest.raises(ConfigurationError, match="num_standby_replicas"):
        AssignorSettings(num_standby_replicas=-1)


def test_a_follow_up_is_due_exactly_while_moves_are_pending() -> None:
    assert not TaskAssignment({}).followup
    move = PendingMove(TaskId(0, 0), Role.ACTIVE, "c2", "c1", Warmup.WAITING)
    assert TaskAssignment({}, (move,)).followup
