"""The README's and docs/ pages' snippets that no other test runs, run or checked here as a user
would meet them (all without a broker, in seconds):

- the README's first example (the ad join) with docs/testing.md's `TestDriver` snippet on it;
- the README's `streamjoin worker app:joins` is the command the demo's workers run;
- docs/workers.md's production command parses with the worker's own options, and its memory
  budget line is what the worker logs;
- docs/guarantees.md's app setting.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

import streamjoin
from streamjoin.cli import app as cli
from streamjoin.state.memory import MemoryBudget

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text
from docs_text import ROOT, blocks, page, section

VALUE_TYPES = """\
from dataclasses import dataclass


@dataclass(frozen=True)
class Impression:
    auction_id: str
    campaign: str


@dataclass(frozen=True)
class Click:
    auction_id: str


"""


def test_the_readme_example_runs_under_the_test_driver(tmp_path: Path) -> None:
    [example] = blocks(page("README.md"), "python")[:1]
    [testing] = blocks(page("docs/testing.md"), "python")
    assert example.startswith("# app.py\n")
    script = tmp_path / "app.py"
    script.write_text(VALUE_TYPES + example + "\n" + testing + 'print("ok")\n')
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_readme_worker_command_is_the_one_the_demo_runs(tmp_path: Path) -> None:
    intro = page("README.md").split("\n## ")[0]
    [command] = blocks(intro, "bash")
    words = shlex.split(command, comments=True)
    spec = importlib.util.spec_from_file_location("ads_workers", ROOT / "apps/ads/workers.py")
    assert spec is not None and spec.loader is not None
    workers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workers)
    demo = workers.WorkerProcess("w", "localhost:9092", tmp_path)._command
    assert words == ["streamjoin", *demo[3:5]] == ["streamjoin", "worker", "app:joins"]


def test_the_production_worker_command_parses_with_the_workers_options() -> None:
    [command] = blocks(page("docs/workers.md"), "bash")[:1]
    words = shlex.split(command.replace("\\\n", " "))
    assert words[:3] == ["streamjoin", "worker", "app:joins"]
    group: Any = typer.main.get_command(cli)
    worker = group.get_command(group.context_class(group), "worker")
    context = worker.make_context("worker", words[2:])
    assert context.params["state_dir"] == Path("/var/lib/streamjoin")
    assert context.params["commit_interval"] == 5
    assert context.params["metrics_port"] == 9100


def test_the_memory_budget_line_is_what_the_worker_logs() -> None:
    [line] = blocks(section("docs/workers.md", "Memory"), "text")
    assert line.strip() == MemoryBudget().describe()


def test_the_guarantee_is_set_in_the_app_as_shown() -> None:
    [snippet] = blocks(page("docs/guarantees.md"), "python")[:1]
    scope: dict[str, Any] = {"streamjoin": streamjoin}
    exec(snippet, scope)
    assert scope["joins"].settings.processing_guarantee == "exactly_once"
