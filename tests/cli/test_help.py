"""The command line's help reads like the ecosystem's: conventional metavars, choices and
defaults shown, summaries that are not cut short, an option for each setting the docs name."""

from __future__ import annotations

import re
from collections.abc import Iterator

from typer.main import get_command
from typer.testing import CliRunner

from streamjoin.cli import app

runner = CliRunner()


def command_paths() -> Iterator[list[str]]:
    root = get_command(app)
    for name, command in getattr(root, "commands", {}).items():
        yield [name]
        for sub in getattr(command, "commands", {}):
            yield [name, sub]


def help_of(*path: str) -> str:
    result = runner.invoke(app, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_no_command_shows_type_labels_or_braces() -> None:
    for path in [[], *command_paths()]:
        text = help_of(*path)
        assert not re.search(r"<(str|int|float|bool|path|text)>", text), (path, text)
        usage = text.splitlines()[0]
        assert usage.startswith("Usage: streamjoin") and "{" not in usage, usage


def test_worker_help_names_choices_defaults_and_the_readme_settings() -> None:
    text = help_of("worker")
    assert text.splitlines()[0] == "Usage: streamjoin worker [OPTIONS] APP"
    flat = " ".join(text.split())
    assert "--on-error [dlq|fail]" in flat
    assert "[default: (app setting, dlq)]" in flat
    assert "--capacity INTEGER" in flat and "[default: 1]" in flat
    assert "--metrics-port PORT" in flat and "--bootstrap HOST:PORT" in flat
    for setting, option in {
        "max_task_idle_ms": "--max-task-idle-ms MS",
        "max_warmup_replicas": "--max-warmup-replicas INTEGER",
        "probing_rebalance_interval_s": "--probing-rebalance-interval SECONDS",
        "acceptable_recovery_lag": "--acceptable-recovery-lag RECORDS",
        "num_standby_replicas": "--standby-replicas INTEGER",
        "commit_interval_s": "--commit-interval SECONDS",
    }.items():
        assert option in flat and f"({setting})" in flat, setting
    assert "window_memory_bytes is set in the app only" in flat
    assert "--create-topics" in flat


def test_the_command_list_wraps_summaries_between_words() -> None:
    text = help_of()
    listed = text[text.index("Commands:") :].splitlines()[1:]
    assert {line.split()[0] for line in listed if not line.startswith("    ")} >= {
        "broker",
        "topics",
        "produce",
        "consume",
        "worker",
        "plan",
    }
    for line in listed:
        assert not line.rstrip().endswith("..."), line
        assert len(line) <= 80, line


def test_tool_options_show_their_metavars_and_defaults() -> None:
    flat = " ".join(help_of("consume").split())
    assert "Usage: streamjoin consume [OPTIONS] TOPIC" in flat
    assert "--format [text|json]" in flat and "[default: text]" in flat
    assert "-b, --bootstrap HOST:PORT" in flat and "STREAMJOIN_BOOTSTRAP" in flat
    flat = " ".join(help_of("topics", "create").split())
    assert "Usage: streamjoin topics create [OPTIONS] NAME..." in flat
    assert "-p, --partitions INTEGER" in flat and "--config KEY=VALUE" in flat
