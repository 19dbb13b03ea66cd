"""The README's global table example, run as written there."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_global_table_example_runs() -> None:
    text = README.read_text()
    start = text.index("### Global tables\n")
    section = text[start : text.index("\n## ", start)]
    [example] = re.findall(r"^```python\n(.*?)^```$", section, re.M | re.S)
    namespace: dict[str, object] = {"__name__": "readme_global_table"}
    exec(compile(example, "README.md", "exec"), namespace)
    assert "locate" in namespace
