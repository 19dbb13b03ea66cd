"""The end-to-end tests share helper modules and apps kept beside them (`harness`,
`worker_processes`, `learn_app`, `clicks_app`); the worker processes import the apps by path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
