"""docs/table-joins.md's example, written to bank.py and run with `python bank.py` as the page
shows: its output is the one printed there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text
from docs_text import page


def section() -> str:
    return page("docs/table-joins.md")


def test_the_table_joins_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    (source,) = re.findall(r"^```python\n(.*?)^```$", section(), re.M | re.S)
    (shown,) = re.findall(r"^```text\n\$ python bank.py\n(.*?)^```$", section(), re.M | re.S)
    assert source.startswith("# bank.py\n")
    (tmp_path / "bank.py").write_text(source)
    done = subprocess.run(
        [sys.executable, "bank.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
