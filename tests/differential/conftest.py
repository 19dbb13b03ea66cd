"""The differential suite's helper modules (diff_*.py) sit beside its test; bench/differential.py
imports them the same way."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
