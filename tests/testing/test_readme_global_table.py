"""docs/joins.md's global table example, run as a user runs it: saved to a file, run by Python."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text
from docs_text import section


def test_the_readme_global_table_example_runs(tmp_path: Path) -> None:
    text = section("docs/joins.md", "Global tables")
    [example] = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)
    script = tmp_path / "geo.py"
    script.write_text(example + 'print("ok")\n')
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
