"""A child started with `die_with_parent` ends when what started it is killed outright."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from child_processes import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

STARTER = """
import subprocess, sys, time
from streamjoin.lifetime import die_with_parent
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=die_with_parent
)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_the_child_ends_when_its_starter_is_killed() -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    child = int(starter.stdout.readline())
    assert alive(child)
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the child outlived a SIGKILL of its starter"
