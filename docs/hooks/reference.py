"""The reference pages, generated from the code at every `mkdocs build` so they cannot drift.

- `reference/cli.md`: every `streamjoin` command's `--help`, rendered by click itself from the
  typer app (every option, its default, its environment variable and its help).
- `reference/configuration.md`: the settings of `streamjoin.App(...)` (`AppSettings`), of an
  embedded `Worker` (`WorkerOptions`) and of `KafkaSecurity`: each field's type, default and
  docstring, read from the dataclasses and their sources, with the `streamjoin worker` option
  that overrides an app setting.

Generated at build time rather than committed: there is no copy to fall behind, and `make lint`
builds the site with `--strict`, so a field without a docstring (the build fails, naming it) or a
broken link stops the build. mkdocs loads this file as a hook (mkdocs.yml `hooks:`).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from collections.abc import Iterator
from typing import Any

import typer
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

HELP_WIDTH = 100
"""Columns the help is rendered at (the terminal's width does not change the page)."""

PAGES = {
    "reference/cli.md": "cli_reference",
    "reference/configuration.md": "configuration_reference",
}

OVERRIDING_OPTION = {"broker": "--bootstrap", "memory_budget_bytes": "--memory"}
"""App settings whose `streamjoin worker` option is not named after them."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site (nothing is written into docs/)."""
    for path, builder in PAGES.items():
        files.append(File.generated(config, path, content=globals()[builder]()))
    return files


# -- the command line -------------------------------------------------------------------------


def cli_reference() -> str:
    from streamjoin.cli import app  # noqa: PLC0415 - the CLI imports every command module

    root = typer.main.get_command(app)
    context = _context(root, "streamjoin", None)
    lines = [
        "# Command line",
        "",
        "Every command of `streamjoin`, with what its `--help` prints: generated from the",
        "command line's own definitions when the site is built. Each command that talks to Kafka",
        "takes `--bootstrap HOST:PORT` (or `STREAMJOIN_BOOTSTRAP`) and the security options of",
        "[secured clusters](../security.md).",
        "",
    ]
    for path, command, ctx in _commands(root, context):
        lines += [f"## `{path}`", "", "```text", command.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(lines)


def _context(command: Any, name: str, parent: Any) -> Any:
    """A click context for `command`, as `streamjoin ... --help` makes (typer ships its own copy
    of click, so its classes are used through the command, never imported)."""
    return command.context_class(
        command,
        info_name=name,
        parent=parent,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )


def _commands(group: Any, context: Any) -> Iterator[tuple[str, Any, Any]]:
    """Every command below `group`, in the order `--help` lists them; groups before theirs."""
    if not hasattr(group, "list_commands"):
        return
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None or command.hidden:
            continue
        ctx = _context(command, name, context)
        yield ctx.command_path, command, ctx
        yield from _commands(command, ctx)


# -- the settings -----------------------------------------------------------------------------


def configuration_reference() -> str:
    from streamjoin.dsl.settings import AppSettings  # noqa: PLC0415
    from streamjoin.kafka.security import KafkaSecurity  # noqa: PLC0415
    from streamjoin.runtime.process.options import WorkerOptions  # noqa: PLC0415

    options = _worker_options()
    lines = [
        "# Configuration",
        "",
        "Generated from the code when the site is built: each field's type, default and",
        "docstring.",
        "",
        "## App settings",
        "",
        'Keyword arguments of `streamjoin.App("app-id", broker=..., ...)` (`AppSettings`). A',
        "`streamjoin worker` option overrides the app's value for that run; `streamjoin worker",
        "--help` shows the app's value as the option's default.",
        "",
        "| setting | default | `streamjoin worker` option | what it is |",
        "| --- | --- | --- | --- |",
    ]
    for name, default, doc in _documented_fields(AppSettings):
        option = _option_for(name, options)
        lines.append(f"| `{name}` | {default} | {option} | {doc} |")
    lines += [
        "",
        "## Worker options",
        "",
        "`streamjoin.runtime.process.worker.Worker(app, WorkerOptions(...))` runs a worker inside",
        "a program of your own (the command line builds the same object from its options); a",
        "field left at None keeps the app's setting.",
        "",
        "| field | default | what it is |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{n}` | {d} | {doc} |" for n, d, doc in _documented_fields(WorkerOptions)]
    lines += [
        "",
        "## Kafka security",
        "",
        "`streamjoin.KafkaSecurity(...)`, the app's `security=`; see",
        "[secured clusters](../security.md) for the files, environment variables and options",
        "that override it field by field.",
        "",
        "| field | default | what it is |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{n}` | {d} | {doc} |" for n, d, doc in _documented_fields(KafkaSecurity)]
    return "\n".join(lines) + "\n"


def _documented_fields(cls: type) -> Iterator[tuple[str, str, str]]:
    """Each dataclass field of `cls`: name, default (as code) and docstring (one line).
    A field without a docstring fails the build: the reference would say nothing of it."""
    docs = _attribute_docstrings(cls)
    for field in dataclasses.fields(cls):
        doc = docs.get(field.name)
        if not doc:
            raise PluginError(
                f"{cls.__module__}.{cls.__name__}.{field.name} has no docstring: "
                "the configuration reference needs one (a string literal under the field)"
            )
        yield field.name, _default(field), " ".join(doc.split()).replace("|", "\\|")


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "(required)"
    if dataclasses.is_dataclass(value):
        return f"`{type(value).__name__}()`"
    return f"`{value!r}`"


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """Field name -> the string literal that follows its annotation in the class body."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef)).body
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _worker_options() -> dict[str, Any]:
    """The `streamjoin worker` options by their long name."""
    from streamjoin.cli import app  # noqa: PLC0415

    root = typer.main.get_command(app)
    worker = root.get_command(_context(root, "streamjoin", None), "worker")  # type: ignore[attr-defined]
    return {opt: p for p in worker.params for opt in p.opts if opt.startswith("--")}


def _option_for(setting: str, options: dict[str, Any]) -> str:
    """The worker option that overrides `setting`: the one named after it (less a unit
    suffix or a `num_` prefix), or the one its help names it in, or OVERRIDING_OPTION's."""
    if setting == "security":
        return "`--kafka-config` and the security options"
    stem = setting.removeprefix("num_").removesuffix("_s").removesuffix("_ms")
    names = {f"--{setting.replace('_', '-')}", f"--{stem.replace('_', '-')}"}
    names.add(OVERRIDING_OPTION.get(setting, ""))
    found = [opt for opt in options if opt in names]
    found += [
        opt
        for opt, param in options.items()
        if f"({setting})" in (getattr(param, "help", None) or "") and opt not in found
    ]
    return ", ".join(f"`{opt}`" for opt in found) or "(in the app only)"
