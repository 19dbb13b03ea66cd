"""`plan_tasks`: JSON-shaped scenarios in, the fixed JSON answer out, one-line errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamjoin.assignment import plan_tasks
from streamjoin.assignment.tasks import AssignorSettings
from streamjoin.assignment.tasks.scenario import parse_scenario
from streamjoin.errors import ConfigurationError

ISSUE_EXAMPLE: dict[str, Any] = {
    "config": {
        "acceptable_recovery_lag": 10000,
        "max_warmup_replicas": 2,
        "num_standby_replicas": 1,
    },
    "tasks": {"0_0": {"stateful": True, "end_offset": 150000}, "1_0": {"stateful": False}},
    "clients": {
        "c1": {"capacity": 1, "active": ["0_0"], "standby": [], "offsets": {"0_0": -2}},
        "c2": {"capacity": 2},
    },
}


def test_the_issue_example_plans_in_the_fixed_shape() -> None:
    result = plan_tasks(copy.deepcopy(ISSUE_EXAMPLE))
    assert set(result) == {"clients", "followup", "assign_ms"}
    assert isinstance(result["assign_ms"], float) and result["assign_ms"] >= 0
    assert result["clients"] == {
        "c1": {"active": ["0_0"], "standby": [], "learner": [], "warmup": []},
        # c2 has the larger share: it takes the stateless task and 0_0's standby (no move).
        "c2": {"active": ["1_0"], "standby": ["0_0"], "learner": [], "warmup": []},
    }
    assert result["followup"] is False


def test_missing_keys_take_the_defaults() -> None:
    parsed = parse_scenario({"tasks": {"0_0": {"end_offset": 5}, "0_1": {}}, "clients": {"a": {}}})
    assert parsed.settings == AssignorSettings()
    assert [(str(s.task), s.end_offset_sum) for s in parsed.tasks] == [("0_0", 5), ("0_1", None)]
    assert parsed.clients[0].capacity == 1
    assert (
        parse_scenario({"tasks": {"0_0": {"stateful": True}}, "clients": {"a": {}}})
        .tasks[0]
        .end_offset_sum
        == 0
    )


def test_a_warming_scenario_asks_for_a_follow_up() -> None:
    scenario = {
        "config": {"acceptable_recovery_lag": 100},
        "tasks": {f"0_{p}": {"end_offset": 1000} for p in range(4)},
        "clients": {
            "c1": {
                "active": [f"0_{p}" for p in range(4)],
                "offsets": {f"0_{p}": -2 for p in range(4)},
            },
            "c2": {},
        },
    }
    result = plan_tasks(scenario)
    assert result["followup"] is True
    assert len(result["clients"]["c2"]["learner"]) == 2
    assert len(result["clients"]["c1"]["active"]) == 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(tasks=[]), "tasks: expected an object, got list"),
        (lambda s: s.pop("clients"), 'needs both "tasks" and "clients"'),
        (lambda s: s.update(clients={}), '"clients" is empty'),
        (lambda s: s.update(extra=1), "the scenario: unknown key 'extra'"),
        (
            lambda s: s["config"].update(max_warmup_replicas="2"),
            "config.max_warmup_replicas: expected an integer",
        ),
        (
            lambda s: s["config"].update(max_warmup_replicas=0),
            "max_warmup_replicas 0 must be at least 1",
        ),
        (lambda s: s["config"].update(standbys=1), "config: unknown key 'standbys'"),
        (lambda s: s["tasks"].update({"x_1": {}}), "tasks: task id 'x_1' is not"),
        (lambda s: s["tasks"]["0_0"].update(end_offset=-1), "tasks.0_0.end_offset: -1 is negative"),
        (
            lambda s: s["tasks"]["0_0"].update(stateful="yes"),
            "tasks.0_0.stateful: expected true or false",
        ),
        (
            lambda s: s["tasks"]["1_0"].update(end_offset=5),
            "tasks.1_0: a stateless task has no changelog",
        ),
        (
            lambda s: s["clients"]["c1"].update(active=["9_9"]),
            "clients.c1.active: task 9_9 is not listed",
        ),
        (lambda s: s["clients"]["c1"].update(standby="0_0"), "clients.c1.standby: expected a list"),
        (
            lambda s: s["clients"]["c1"].update(standby=["0_0"]),
            "both a previous active and a previous standby",
        ),
        (lambda s: s["clients"]["c1"]["offsets"].update({"1_0": 3}), "task 1_0 is stateless"),
        (lambda s: s["clients"]["c1"]["offsets"].update({"0_0": -5}), "offset sum -5"),
        (lambda s: s["clients"]["c2"].update(capacity=0), "capacity 0 must be at least 1"),
        (
            lambda s: s["clients"]["c2"].update(capacity=True),
            "clients.c2.capacity: expected an integer",
        ),
    ],
)
def test_malformed_scenarios_say_what_is_wrong_and_where(change: Any, message: str) -> None:
    scenario = copy.deepcopy(ISSUE_EXAMPLE)
    change(scenario)
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")) as raised:
        plan_tasks(scenario)
    assert "\n" not in str(raised.value)


def test_not_an_object_at_all() -> None:
    with pytest.raises(ConfigurationError, match="the scenario: expected an object, got list"):
        plan_tasks([])  # type: ignore[arg-type]
