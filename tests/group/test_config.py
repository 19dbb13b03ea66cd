"""Member settings are checked at construction, with messages that say what to change."""

from __future__ import annotations

from typing import Any

import pytest

from streamjoin.assignment.consumer.range import RangeAssignor
from streamjoin.errors import ConfigurationError
from streamjoin.group.config import MemberConfig, resolve_assignors


def config(**changes: Any) -> MemberConfig:
    fields: dict[str, Any] = {"group_id": "g", "topics": ("t",), "assignors": (RangeAssignor(),)}
    return MemberConfig(**{**fields, **changes})


def test_defaults_are_valid() -> None:
    assert config().session_timeout_ms > config().heartbeat_interval_ms


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"group_id": ""}, "group_id is empty"),
        ({"topics": ()}, "at least one topic"),
        ({"topics": ("",)}, "at least one topic"),
        ({"assignors": ()}, "at least one assignor"),
        ({"session_timeout_ms": 0}, "session_timeout_ms must be positive"),
        ({"heartbeat_interval_ms": 10_000}, r"heartbeat_interval_ms \(10000\) must be below"),
        ({"retry_backoff_ms": 5_000}, "retry_backoff_ms"),
        ({"rejoin_delay_ms": -1}, "rejoin_delay_ms"),
        ({"group_instance_id": ""}, "use None for a dynamic member"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        config(**changes)


def test_assignors_resolve_from_names_or_instances_in_order() -> None:
    mine = RangeAssignor()
    resolved = resolve_assignors(["cooperative-sticky", mine])
    assert [a.name for a in resolved] == ["cooperative-sticky", "range"]
    assert resolved[1] is mine
    with pytest.raises(ConfigurationError, match="unknown assignor 'sticki'"):
        resolve_assignors(["sticki"])
    with pytest.raises(ConfigurationError, match="listed twice: range"):
        resolve_assignors(["range", mine])
    with pytest.raises(ConfigurationError, match="no assignors"):
        resolve_assignors([])
