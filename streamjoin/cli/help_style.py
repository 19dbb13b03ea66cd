"""Help that reads like the ecosystem's command lines (click, Kafka's tools): `APP` in the
usage line, `--capacity INTEGER`, choices as `[dlq|fail]`, no type label on flags or on
arguments (their name says it). Typer 0.29 labels types `<int>` and arguments `{app}` instead.

The one module that leans on typer's internals: the type label of its help comes from
`TyperOption.display_type_rich` and `TyperArgument.display_type_rich`, the parameter's type from
`type_descriptor`, the argument's name from `display_name_raw` (typer 0.29; tests/cli/
test_help_style.py fails when typer changes them). With a typer that lacks them the help keeps
typer's own style and everything else works (`KNOWN_TYPER`). Everything else here is click's
public API (`get_usage_pieces`, `get_help_option`, `get_short_help_str`), and the classes are
typer's documented `typer.core` ones.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, get_args

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ("KNOWN_TYPER", "ConventionalGroup")

_TYPE_NAMES: dict[Any, str] = {int: "INTEGER", float: "FLOAT", str: "TEXT", Path: "PATH"}

KNOWN_TYPER = all(
    hasattr(cls, name)
    for cls, name in (
        (TyperOption, "display_type_rich"),
        (TyperArgument, "display_type_rich"),
        (TyperArgument, "display_name_raw"),
    )
)
"""Whether this typer renders type labels the way the restyling below overrides (0.29)."""


def _type_label(option: TyperOption) -> str:
    described = option.type_descriptor
    if described.is_choice and described.choices is not None:
        values = (c.value if isinstance(c, enum.Enum) else c for c in described.choices)
        return "[" + "|".join(map(str, values)) + "]"
    annotation = described.annotation
    if described.is_list:
        annotation = get_args(annotation)[0]
    return _TYPE_NAMES.get(annotation, getattr(annotation, "__name__", "VALUE").upper())


class _Option(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return self.metavar or _type_label(self)


class _Argument(TyperArgument):
    @property
    def display_name_raw(self) -> str:
        return self.metavar or (self.name or "").upper()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        """`NAME`, `[NAME]` when optional, then `...` when it takes several (as click)."""
        name = self.display_name_raw.removesuffix("...")
        shown = name if self.required else f"[{name}]"
        return [shown + ("..." if self.nargs != 1 else "")]


def _restyle(command: Any) -> None:
    """Give a command's parameters (and its subcommands', and --help's) the styles above."""
    if KNOWN_TYPER:
        for param in command.params:
            if type(param) is TyperOption:
                param.__class__ = _Option
            elif type(param) is TyperArgument:
                param.__class__ = _Argument
    if type(command) is TyperCommand:
        command.__class__ = _Command
    for sub in getattr(command, "commands", {}).values():
        _restyle(sub)
        if type(sub) is TyperGroup:
            sub.__class__ = ConventionalGroup


def _styled_help(option: Any) -> Any:
    if KNOWN_TYPER and type(option) is TyperOption:
        option.__class__ = _Option
    return option


def _summary(command: TyperCommand | TyperGroup) -> str:
    """A command's first paragraph on one line: the list of commands wraps it between words
    instead of cutting it short."""
    text = command.short_help or command.help or ""
    return " ".join(text.split("\n\n")[0].split())


class _Command(TyperCommand):
    def get_help_option(self, ctx: Any) -> Any:
        return _styled_help(super().get_help_option(ctx))

    def get_short_help_str(self, limit: int = 45) -> str:
        return _summary(self)


class ConventionalGroup(TyperGroup):
    """The root group: restyles every command under it once they are all registered."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _restyle(self)

    def get_help_option(self, ctx: Any) -> Any:
        return _styled_help(super().get_help_option(ctx))

    def get_short_help_str(self, limit: int = 45) -> str:
        return _summary(self)
