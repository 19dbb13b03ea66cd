"""`streamjoin plan --tasks`: the function the plan command calls, and the command itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from streamjoin.assignment import plan_tasks
from streamjoin.cli import app
from streamjoin.cli.plan.tasks import run_task_plan

SCENARIO: dict[str, Any] = {
    "config": {"acceptable_recovery_lag": 100, "max_warmup_replicas": 1, "num_standby_replicas": 0},
    "tasks": {
        **{f"0_{p}": {"stateful": True, "end_offset": 150000} for p in range(4)},
        "1_0": {"stateful": False},
    },
    "clients": {
        "c1": {"active": ["0_0", "0_1", "0_2", "0_3"], "offsets": {f"0_{p}": -2 for p in range(4)}},
        "c2": {"capacity": 3},
    },
}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    return path


def without_timing(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key != "assign_ms"}


def test_json_output_is_what_plan_tasks_returns(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_task_plan(scenario_file, as_json=True)
    printed = json.loads(capsys.readouterr().out)
    assert without_timing(printed) == without_timing(plan_tasks(SCENARIO))
    assert isinstance(printed["assign_ms"], float)


def test_readable_output_shows_roles_balance_and_pending_moves(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_task_plan(scenario_file, as_json=False)
    out = capsys.readouterr().out
    assert "acceptable lag 100, warm-ups 1, standbys 0" in out
    assert "c1      1        4  0_0-3" in out
    assert "valid" in out.splitlines()
    assert "follow-up rebalance needed: 3 moves under way" in out
    assert "(warming up as a learner)" in out
    assert "(waiting for warm-up budget)" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        (json.dumps({"tasks": {"0_0": {}}, "clients": {}}), '"clients" is empty'),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(typer.Exit) as exited:
        run_task_plan(path, as_json=False)
    assert exited.value.exit_code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_file_exits_with_status_2(tmp_path: Path) -> None:
    with pytest.raises(typer.Exit) as exited:
        run_task_plan(tmp_path / "nope.json", as_json=True)
    assert exited.value.exit_code == 2


def test_the_plan_command_with_tasks(scenario_file: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "--tasks", str(scenario_file), "--json"])
    assert result.exit_code == 0, result.output
    assert without_timing(json.loads(result.stdout)) == without_timing(plan_tasks(SCENARIO))


def plan_cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["plan", "--tasks", *args])


def test_join_adds_a_client_without_state(scenario_file: Path) -> None:
    result = plan_cli(str(scenario_file), "--json", "--join", "c3")
    assert result.exit_code == 0, result.output
    clients = json.loads(result.stdout)["clients"]
    assert set(clients) == {"c1", "c2", "c3"}
    assert clients["c3"]["active"] == []  # no state: what moves to it warms up first
    assert clients["c3"]["learner"] == clients["c3"]["warmup"]
    baseline = json.loads(plan_cli(str(scenario_file), "--json").stdout)["clients"]
    assert clients != baseline  # a different question gets a different answer


def test_leave_takes_a_client_and_its_tasks_move(scenario_file: Path) -> None:
    result = plan_cli(str(scenario_file), "--json", "--leave", "c1")
    assert result.exit_code == 0, result.output
    clients = json.loads(result.stdout)["clients"]
    assert set(clients) == {"c2"}
    assert clients["c2"]["active"] == ["0_0", "0_1", "0_2", "0_3", "1_0"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--assignor", "range"), "--assignor does not apply to --tasks"),
        (("--leave", "c9"), "--leave c9: no such client"),
        (("--join", "c1"), "--join c1: that client is already in the scenario"),
    ],
)
def test_what_ifs_that_cannot_apply_are_refused_in_one_line(
    scenario_file: Path, args: tuple[str, ...], message: str
) -> None:
    result = plan_cli(str(scenario_file), *args)
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_standby_slot_warm_up_is_shown(tmp_path: Path) -> None:
    """The scale-out of issue 27: one worker with every task, a second joins, one standby."""
    scenario = {
        "config": {"acceptable_recovery_lag": 100, "num_standby_replicas": 1},
        "tasks": {f"0_{p}": {"end_offset": 5000} for p in range(4)},
        "clients": {"c1": {"active": [f"0_{p}" for p in range(4)], "offsets": {}}},
    }
    scenario["clients"]["c1"]["offsets"] = {f"0_{p}": -2 for p in range(4)}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    result = plan_cli(str(path), "--join", "c2")
    assert result.exit_code == 0, result.output
    assert "(warming up as its standby)" in result.output
    data = json.loads(plan_cli(str(path), "--join", "c2", "--json").stdout)
    assert len(data["clients"]["c2"]["warmup"]) == 2 and data["clients"]["c2"]["learner"] == []


def test_a_client_with_members_shows_each_with_its_share(tmp_path: Path) -> None:
    """A host of two worker processes is one client of capacity 2, its tasks spread over both,
    each keeping what it ran."""
    scenario = {
        "tasks": {f"0_{p}": {"end_offset": 0} for p in range(6)},
        "clients": {
            "host-a": {"members": {"a-0": {"active": ["0_1", "0_4"]}, "a-1": {}}},
            "host-b": {},
        },
    }
    path = tmp_path / "members.json"
    path.write_text(json.dumps(scenario))
    result = CliRunner().invoke(app, ["plan", "--tasks", str(path)])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert ["host-a", "2", "4", "0_0-1,", "0_3-4", "0", "-", "-"] in rows
    assert ["member", "a-0", "1", "2", "0_1,", "0_4", "0", "-", "-"] in rows
    assert ["member", "a-1", "1", "2", "0_0,", "0_3", "0", "-", "-"] in rows
    assert ["host-b", "1", "2", "0_2,", "0_5", "0", "-", "-"] in rows
    planned = plan_tasks(scenario)["clients"]["host-a"]["members"]
    assert {t for m in planned.values() for t in m["active"]} == set(
        plan_tasks(scenario)["clients"]["host-a"]["active"]
    )
    assert set(planned["a-0"]["active"]) >= {"0_1", "0_4"}
