"""The generated reference pages (docs/hooks/reference.py) cover the whole command line and every
setting: each command with every option `--help` shows, each field with its default, and each
app setting with the `streamjoin worker` option that overrides it."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from streamjoin.cli import app
from streamjoin.dsl.settings import AppSettings
from streamjoin.kafka.security import KafkaSecurity
from streamjoin.runtime.process.options import WorkerOptions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "docs/hooks/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def help_of(*command: str) -> str:
    done = CliRunner().invoke(app, [*command, "--help"], terminal_width=100)
    assert done.exit_code == 0, done.output
    return done.output


def test_every_command_is_there_with_what_its_help_says(hook: ModuleType) -> None:
    page = hook.cli_reference()
    listed = re.findall(r"^  ([a-z-]+)  ", help_of().split("Commands:")[1], re.M)
    assert len(listed) >= 13
    for name in listed:
        assert f"## `streamjoin {name}`" in page
    assert "## `streamjoin topics create`" in page
    worker = page.split("## `streamjoin worker`")[1].split("\n## ")[0]
    options = re.findall(r"^  (--[a-z-]+)", help_of("worker"), re.M)
    assert "--processing-guarantee" in options
    for option in options:
        assert option in worker
    assert "[default: (app setting, 5.0 s)]" in " ".join(worker.split())


def test_every_setting_is_there_with_its_default_and_option(hook: ModuleType) -> None:
    page = hook.configuration_reference()
    for cls in (AppSettings, WorkerOptions, KafkaSecurity):
        for field in dataclasses.fields(cls):
            assert f"| `{field.name}` |" in page, field.name
    app_settings = page.split("## App settings")[1].split("\n## ")[0]
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in app_settings.splitlines()
        if line.startswith("| `")
    }
    assert "| `5.0` | `--commit-interval` |" in rows["commit_interval_s"]
    assert "`--bootstrap`" in rows["broker"]
    assert "`--standby-replicas`" in rows["num_standby_replicas"]
    assert "`--max-task-idle-ms`" in rows["max_task_idle_ms"]
    assert "(in the app only)" in rows["window_memory_bytes"]


def test_a_field_without_a_docstring_stops_the_build(hook: ModuleType) -> None:
    @dataclasses.dataclass
    class Settings:
        documented: int = 1
        """Said."""
        silent: int = 2

    with pytest.raises(Exception, match=r"Settings\.silent has no docstring"):
        list(hook._documented_fields(Settings))
