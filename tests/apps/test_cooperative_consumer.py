"""The cooperative consumer example, run as users run it, against the session broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "apps" / "cooperative_consumer.py"


def test_a_second_instance_takes_over_only_some_partitions(broker: Broker, unique: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--demo",
            "--bootstrap",
            broker.bootstrap,
            "--topic",
            f"orders-{unique}",
            "--group",
            f"demo-{unique}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[first] assigned [0, 1, 2, 3, 4, 5]"
    revoked = next(line for line in lines if line.startswith("[first] revoked"))
    taken = next(line for line in lines if line.startswith("[second] assigned"))
    assert revoked.removeprefix("[first] revoked ") == taken.removeprefix("[second] assigned ")
    assert revoked != "[first] revoked [0, 1, 2, 3, 4, 5]"
    assert any(line.startswith("records consumed: first ") for line in lines)
