"""The README's demo, run as users run it, against the session broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.broker import EmbeddedBroker

pytestmark = pytest.mark.broker

DEMO = Path(__file__).resolve().parents[2] / "apps" / "ads" / "demo.py"


def test_demo_produces_and_reads_back_every_record(broker: EmbeddedBroker) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--bootstrap", broker.bootstrap, "--impressions", "2000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("consumed: impressions=2000/2000 clicks=")
    assert last.endswith(" OK")
    assert "clicks in another partition than their impression: 0" in done.stdout
