"""The README's and docs/ pages' text, for the tests that run their commands and snippets as a
user types them (tests/cli/test_readme_*.py and others).

A test names the page it reads (`section("docs/queries.md", ...)`), and the page marks each
code block it runs with `<!-- run by tests/... -->` just before the block;
tests/docs/test_code_blocks.py checks that every block is run by a test that reads its page, or
is marked `<!-- not run: why -->`. Tests import this module after putting tests/ on sys.path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ("ROOT", "blocks", "page", "section")

ROOT = Path(__file__).resolve().parents[1]
_HEADING = re.compile(r"^(#{1,6}) (.*)$")


def page(path: str) -> str:
    """The text of a page, by its path from the repository's root (`README.md`, `docs/x.md`)."""
    return (ROOT / path).read_text()


def section(path: str, title: str) -> str:
    """The section of `path` under the heading `title` (any level), down to the next heading of
    the same level or above; `title` may be the start of the heading's text."""
    lines = page(path).splitlines(keepends=True)
    found: tuple[int, int] | None = None  # (line, level) of the heading
    for number, (level, text) in _headings(lines):
        if found is None and text.startswith(title):
            found = (number, level)
        elif found is not None and level <= found[1]:
            return "".join(lines[found[0] : number])
    if found is None:
        raise AssertionError(f"{path} has no heading {title!r}")
    return "".join(lines[found[0] :])


def _headings(lines: list[str]) -> Iterator[tuple[int, tuple[int, str]]]:
    """(line number, (level, text)) of each heading, outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is not None:
            yield number, (len(heading.group(1)), heading.group(2).rstrip())


def blocks(text: str, language: str) -> list[str]:
    """The contents of the ```language fenced blocks of `text`, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
