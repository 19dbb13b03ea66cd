"""The scenarios in examples/plan run as they are, and the one docs/plan.md shows gives the
output the page shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "plan").glob("*.json"))

runner = CliRunner()


def plan(path: Path) -> str:
    tasks = ["--tasks"] if "tasks" in json.loads(path.read_text()) else []
    result = runner.invoke(app, ["plan", *tasks, str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_there_are_examples_of_a_join_a_leave_and_learners() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "member-joins.json",
        "member-leaves.json",
        "tasks-with-learners.json",
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_plans_to_a_valid_balanced_assignment(path: Path) -> None:
    out = plan(path)
    assert "valid" in out.splitlines()
    if path.stem == "member-leaves":
        assert "4 newly assigned" in out and "spread 0 (balanced)" in out
    if path.stem == "tasks-with-learners":
        assert "(warming up as a learner)" in out


def without_timing(text: str) -> str:
    return re.sub(r"assign [\d.]+ ms", "assign T ms", text).strip()


def test_the_readme_shows_an_example_and_its_output() -> None:
    section = (ROOT / "docs" / "plan.md").read_text()
    (scenario,) = re.findall(r"^```json\n(.*?)^```$", section, re.M | re.S)
    (command,) = re.findall(r"^```bash\n(.*?)^```$", section, re.M | re.S)
    (shown,) = re.findall(r"^```text\n(.*?)^```$", section, re.M | re.S)
    path = ROOT / command.split()[-1]
    assert command.strip() == f"streamjoin plan {path.relative_to(ROOT)}"
    assert json.loads(scenario) == json.loads(path.read_text())
    assert without_timing(plan(path)) == without_timing(shown)
