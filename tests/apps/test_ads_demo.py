"""The README's demo, run as users run it (workers joining and leaving), on the session broker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

DEMO = Path(__file__).resolve().parents[2] / "apps" / "ads" / "demo.py"


def test_demo_joins_every_pair_while_workers_come_and_go(each_broker: Broker) -> None:
    """On the session's broker, and on Tansu (the demo's default) when that is another one."""
    broker = each_broker
    done = subprocess.run(
        [sys.executable, str(DEMO), "--bootstrap", broker.bootstrap, "--impressions", "30000"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    last = done.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"joined: expected=(\d+) present=(\d+) duplicates=(\d+)", last)
    assert match, output
    expected, present, _ = map(int, match.groups())
    assert expected > 8_000 and present == expected
    assert "worker-3 joins (scale-out)" in done.stdout
    assert "worker-1 leaves (scale-in)" in done.stdout
