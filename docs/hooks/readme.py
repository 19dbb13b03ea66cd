"""The site's home page is the repository's README: one text for both, so neither can fall behind.

docs/index.md holds only the marker below; this hook puts the README in its place, with the
README's links into docs/ made relative to the site (`docs/joins.md` -> `joins.md`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MARKER = "<!-- the README goes here (docs/hooks/readme.py) -->"
README = Path(__file__).resolve().parents[2] / "README.md"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    readme = re.sub(r"\]\(docs/", "](", README.read_text())
    return markdown.replace(MARKER, readme)
