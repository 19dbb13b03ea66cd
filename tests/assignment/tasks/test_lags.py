"""Lags and who may host a task's active (caught up, or least lagging when nobody is)."""

from __future__ import annotations

from streamjoin.assignment.tasks import RUNNING_ACTIVE, ClientState, TaskId, TaskSpec
from streamjoin.assignment.tasks.lags import TaskLags, compute_lags, stateless_lags

TASK = TaskId(0, 0)


def lags_of(
    offsets: dict[str, int], end: int = 1_000, acceptable: int = 100, others: int = 1
) -> TaskLags:
    clients = [ClientState(name, offset_sums={TASK: o}) for name, o in offsets.items()]
    clients += [ClientState(f"z{i}") for i in range(others)]
    return compute_lags([TaskSpec(TASK, end)], clients, acceptable)[TASK]


def test_lag_is_end_minus_offset_with_kafkas_special_cases() -> None:
    lags = lags_of({"running": RUNNING_ACTIVE, "behind": 700, "ahead": 5_000})
    assert lags.lag("running") == 0
    assert lags.lag("behind") == 300
    assert lags.lag("ahead") == 1_000  # state ahead of the changelog is not trusted
    assert lags.lag("z0") == 1_000  # no local state: full restore
    assert [client for _, client in lags.ranked] == ["running", "behind", "ahead"]


def test_only_caught_up_clients_may_host_while_one_exists() -> None:
    lags = lags_of({"a": 950, "b": 800})
    assert lags.caught_up_exists
    assert lags.hosts() == ["a"]
    assert not lags.unreported_can_host
    assert lags.host_count() == 1


def test_the_least_lagging_clients_may_host_when_nobody_is_caught_up() -> None:
    lags = lags_of({"a": 500, "b": 500, "c": 200})
    assert not lags.caught_up_exists
    assert lags.hosts() == ["a", "b"]
    assert not lags.can_host(lags.lag("c"))


def test_with_no_state_anywhere_every_client_may_host() -> None:
    lags = lags_of({}, others=3)
    assert lags.unreported_can_host
    assert lags.host_count() == 3


def test_a_changelog_within_the_acceptable_lag_is_caught_up_everywhere() -> None:
    lags = lags_of({"a": 0}, end=50, others=2)
    assert lags.unreported_can_host
    assert lags.host_count() == 3


def test_reports_for_unknown_or_stateless_tasks_are_ignored() -> None:
    stateless = TaskId(1, 0)
    client = ClientState("a", offset_sums={stateless: 5, TaskId(9, 9): 5})
    assert compute_lags([TaskSpec(stateless)], [client], 100) == {}


def test_stateless_tasks_can_run_anywhere() -> None:
    lags = stateless_lags(4)
    assert lags.unreported_can_host and lags.host_count() == 4
