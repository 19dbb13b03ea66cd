"""`streamjoin plan --tasks --from-group`: a worker group's members as clients with members."""

from __future__ import annotations

import pytest

from streamjoin.assignment.consumer.consumer_protocol import encode_assignment, encode_subscription
from streamjoin.assignment.model import Assignment, Subscription
from streamjoin.assignment.task_metadata import (
    AssignmentInfo,
    SubscriptionInfo,
    encode_assignment_info,
    encode_subscription_info,
)
from streamjoin.assignment.tasks import TaskId, plan_tasks
from streamjoin.cli.plan.live_tasks import task_group_scenario
from streamjoin.errors import ConfigurationError


def member(
    name: str, process: str, active: list[int], sums: dict[int, int]
) -> tuple[str, str, str, bytes, bytes]:
    info = SubscriptionInfo(process, offset_sums={TaskId(0, p): s for p, s in sums.items()})
    told = AssignmentInfo(active=tuple(TaskId(0, p) for p in active))
    return (
        name,
        "client",
        "/127.0.0.1",
        encode_subscription(Subscription(("t",), encode_subscription_info(info))),
        encode_assignment(Assignment((), encode_assignment_info(told))),
    )


def test_members_sharing_a_process_id_are_one_client_with_its_members() -> None:
    members = [
        member("a-0", "host-a", [0, 1], {0: -2, 1: -2, 2: 40}),
        member("a-1", "host-a", [2, 3], {2: -2, 3: -2, 0: 10}),
        member("b-0", "host-b", [4, 5], {4: -2, 5: -2, 3: 70}),
    ]
    scenario = task_group_scenario("g", "streamjoin-tasks", members)
    assert scenario["tasks"] == {f"0_{p}": {"end_offset": 70 if p == 3 else 0} for p in range(6)}
    assert scenario["clients"]["host-a"] == {
        "members": {
            "a-0": {"capacity": 1, "active": ["0_0", "0_1"], "standby": []},
            "a-1": {"capacity": 1, "active": ["0_2", "0_3"], "standby": []},
        },
        "offsets": {"0_0": -2, "0_1": -2, "0_2": -2, "0_3": -2},
    }
    planned = plan_tasks(scenario)["clients"]
    assert planned["host-a"]["members"]["a-0"]["active"] == ["0_0", "0_1"]
    assert len(planned["host-a"]["active"]) == 4 and len(planned["host-b"]["active"]) == 2


def test_a_group_of_another_assignor_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="uses the 'range' assignor"):
        task_group_scenario("g", "range", [member("m", "p", [], {})])
