from __future__ import annotations

import json
from typing import Any

import pytest

from streamjoin.assignment import plan
from streamjoin.errors import ConfigurationError

ISSUE_EXAMPLE: dict[str, Any] = {
    "assignor": "sticky",
    "topics": {"t0": 8, "t1": 4},
    "members": {
        "m1": {"topics": ["t0", "t1"], "owned": [["t0", 0], ["t1", 2]], "generation": 3},
        "m2": {"topics": ["t0"]},
    },
}


def test_output_shape_for_the_issue_example() -> None:
    result = plan(ISSUE_EXAMPLE)
    assert set(result) == {"assignor", "assignment", "assign_ms", "summary"}
    assert result["assignor"] == "sticky"
    assert isinstance(result["assign_ms"], float) and result["assign_ms"] >= 0
    assignment = result["assignment"]
    assert sorted(assignment) == ["m1", "m2"]
    assert ["t0", 0] in assignment["m1"] and ["t1", 2] in assignment["m1"]
    assert all(topic == "t0" for topic, _ in assignment["m2"])
    summary = result["summary"]
    assert summary["valid"] and summary["problems"] == []
    assert summary["balance"] == {"min": 6, "max": 6, "spread": 0, "balanced": True}
    assert (summary["kept"], summary["moved"], summary["new"]) == (2, 0, 10)
    assert "revoked_now" not in summary
    json.dumps(result)  # JSON-shaped all the way down


def test_cooperative_sticky_reports_what_is_revoked_now_and_handed_over_later() -> None:
    scenario = {
        "assignor": "cooperative-sticky",
        "topics": {"t": 4},
        "members": {
            "old": {"topics": ["t"], "owned": [["t", 0], ["t", 1], ["t", 2], ["t", 3]]},
            "new": {"topics": ["t"]},
        },
    }
    result = plan(scenario)
    summary = result["summary"]
    assert result["assignment"] == {"new": [], "old": [["t", 0], ["t", 1]]}
    assert summary["revoked_now"] == {"old": [["t", 2], ["t", 3]]}
    assert summary["follow_up"] == {"new": [["t", 2], ["t", 3]]}
    assert summary["balance"]["spread"] == 0  # after the follow-up
    assert summary["valid"]
    assert summary["moves"] == [
        {"topic": "t", "partition": 2, "from": ["old"], "to": "new"},
        {"topic": "t", "partition": 3, "from": ["old"], "to": "new"},
    ]


def test_stream_join_sticky_leaves_extra_partitions_unassigned_without_a_problem() -> None:
    scenario = {
        "assignor": "stream-join-sticky",
        "topics": {"a": 4, "b": 6},
        "members": {
            "x": {"topics": ["a", "b"], "owned": [["a", 3], ["b", 3]], "generation": 2},
            "y": {"topics": ["a", "b"]},
        },
    }
    summary = plan(scenario)["summary"]
    assert summary["valid"]
    assert (summary["partitions"], summary["assigned"], summary["unassigned"]) == (10, 8, 2)
    assert summary["kept"] == 2


@pytest.mark.parametrize(
    "assignor", ["range", "roundrobin", "fair", "sticky", "cooperative-sticky"]
)
def test_every_consumer_assignor_plans_a_valid_assignment(assignor: str) -> None:
    assert plan({**ISSUE_EXAMPLE, "assignor": assignor})["summary"]["valid"]


def test_a_bad_scenario_raises_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown assignor"):
        plan({**ISSUE_EXAMPLE, "assignor": "nope"})
