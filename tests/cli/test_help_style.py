"""What streamjoin.cli.help_style takes from typer's internals, checked on a small app of its
own: these fail when a typer release changes them (then help_style needs a look; the help
still works in typer's own style, KNOWN_TYPER says whether it is restyled)."""

from __future__ import annotations

import enum
from importlib.metadata import version
from typing import Annotated

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from streamjoin.cli import app as streamjoin_app
from streamjoin.cli.help_style import KNOWN_TYPER, ConventionalGroup


class Mode(enum.StrEnum):
    fast = "fast"
    safe = "safe"


tiny = typer.Typer(cls=ConventionalGroup, rich_markup_mode=None, add_completion=False)


@tiny.command()
def run(
    name: Annotated[str, typer.Argument(help="What to run.")],
    more: Annotated[list[str] | None, typer.Argument(help="Other ones.")] = None,
    count: Annotated[int, typer.Option(help="How many.")] = 1,
    mode: Annotated[Mode, typer.Option(help="How.")] = Mode.fast,
    tag: Annotated[list[str] | None, typer.Option(help="Tags.")] = None,
    where: Annotated[str, typer.Option(metavar="HOST:PORT", help="Where.")] = "here",
    verbose: Annotated[bool, typer.Option("--verbose", help="Say more.")] = False,
) -> None:
    """Run things."""


@tiny.command()
def other() -> None:
    """Another command, so that `run` is a subcommand."""


def help_lines() -> list[str]:
    result = CliRunner().invoke(tiny, ["run", "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return [" ".join(line.split()) for line in result.output.splitlines() if line.strip()]


def test_a_typer_that_labels_types_its_own_way_is_one_help_style_restyles() -> None:
    """Typer 0.27 on labels types `<int>`; help_style overrides that where it is rendered in
    0.29. Before 0.27 (on click's own parameters) the help is conventional as it comes."""
    typer_version = tuple(int(part) for part in version("typer").split(".")[:2])
    assert KNOWN_TYPER or typer_version < (0, 27), (
        f"typer {version('typer')} lacks the internals help_style overrides"
    )


def test_usage_type_labels_and_choices_read_like_click() -> None:
    lines = help_lines()
    assert lines[0].endswith(" run [OPTIONS] NAME [MORE]...")
    assert "NAME What to run. [required]" in lines
    assert "MORE... Other ones." in lines or "[MORE]... Other ones." in lines  # typer 0.29, 0.26
    options = {line.split()[0]: line for line in lines if line.startswith("--")}
    assert options["--count"].startswith("--count INTEGER How many.")
    assert options["--mode"].startswith("--mode [fast|safe] How.")
    assert options["--tag"].startswith("--tag TEXT Tags.")
    assert options["--where"].startswith("--where HOST:PORT Where.")
    assert options["--verbose"].startswith("--verbose Say more.")
    assert options["--help"].startswith("--help Show this message and exit.")


@pytest.mark.skipif(not KNOWN_TYPER, reason="this typer's help is left as it comes")
def test_every_parameter_of_streamjoin_is_restyled() -> None:
    """typer builds exactly the classes help_style swaps: none is left in typer's style."""
    root = get_command(streamjoin_app)
    commands = [root]
    while commands:
        command = commands.pop()
        styled = {type(p).__name__ for p in command.params}
        assert styled <= {"_Option", "_Argument"}, (command.name, styled)
        if command is not root:
            assert type(command).__name__ in {"_Command", "ConventionalGroup"}, command.name
        commands.extend(getattr(command, "commands", {}).values())
