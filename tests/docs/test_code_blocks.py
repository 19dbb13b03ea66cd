"""Every code block of the README and of docs/ is run by a test, or says why it is not.

Each fenced block is preceded (last non-blank line before its opening fence) by a marker:

    <!-- run by tests/cli/test_readme_quickstart.py -->       a test runs it (or checks it
                                                            against what the code does)
    <!-- not run: output of the command above -->           something no test can run as is

A "run by" test must exist and read the page (name its path), so a new page or block cannot add
a snippet that nothing runs without saying so. The layout listing of docs/architecture.md is
checked here against the package tree.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text
from docs_text import ROOT, blocks, section

RUN_BY = re.compile(r"^<!-- run by (?P<tests>\S+(?:, \S+)*) -->$")
NOT_RUN = re.compile(r"^<!-- not run: (?P<why>.+\S) -->$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    marker: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    docs = sorted((ROOT / "docs").rglob("*.md"))
    return ["README.md", *(str(p.relative_to(ROOT)) for p in docs)]


def code_blocks(page: str) -> list[Block]:
    """Every fenced block of `page` with the last non-blank line before it."""
    found: list[Block] = []
    before, fenced = "", False
    for number, line in enumerate((ROOT / page).read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            if not fenced:
                found.append(Block(page, number, before))
            fenced = not fenced
        elif line.strip() and not fenced:
            before = line.strip()
    assert not fenced, f"{page}: a code block is not closed"
    return found


def test_every_code_block_is_run_by_a_test_or_marked_not_run() -> None:
    unmarked = [
        str(block)
        for page in pages()
        for block in code_blocks(page)
        if not (RUN_BY.match(block.marker) or NOT_RUN.match(block.marker))
    ]
    assert not unmarked, (
        "code blocks neither run by a test nor marked `<!-- not run: why -->` (put "
        "`<!-- run by tests/....py -->` before a block a test runs): " + ", ".join(unmarked)
    )


def test_each_named_test_exists_and_reads_the_page() -> None:
    wrong = []
    for page in pages():
        for block in code_blocks(page):
            marked = RUN_BY.match(block.marker)
            for test in marked.group("tests").split(", ") if marked else ():
                path = ROOT / test
                if not path.is_file():
                    wrong.append(f"{block}: {test} does not exist")
                elif page not in path.read_text():
                    wrong.append(f"{block}: {test} does not read {page}")
    assert not wrong, "\n".join(wrong)


def test_the_layout_names_every_package() -> None:
    [layout] = blocks(section("docs/architecture.md", "Layout"), "text")
    named = {line.split()[0].split("/")[0] for line in layout.splitlines() if line.strip()}
    packages = {p.parent.name for p in (ROOT / "streamjoin").glob("*/__init__.py")}
    packages |= {p.parent.name for p in (ROOT / "streamjoin" / "runtime").glob("*/__init__.py")}
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    folders = {path.split("/")[0] for path in tracked if "/" in path}
    assert packages <= named, f"packages the layout leaves out: {sorted(packages - named)}"
    missing = {f for f in folders if not f.startswith(".")} - named
    assert not missing, f"top-level folders the layout leaves out: {sorted(missing)}"
