"""README.md's demo (`make demo`), run as users run it (workers joining and leaving), on the
session broker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.broker import Broker, EmbeddedBroker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

DEMO = Path(__file__).resolve().parents[2] / "apps" / "ads" / "demo.py"


def test_demo_joins_every_pair_while_workers_come_and_go(each_broker: Broker) -> None:
    """On the session's broker, and on Tansu (the demo's default) when that is another one."""
    broker = each_broker
    # Tansu answers JoinGroup after about half the session timeout, so its follow-up rebalance
    # can come 15 s after the learners caught up: more traffic keeps the moves inside the run.
    impressions = "45000" if isinstance(broker, EmbeddedBroker) else "30000"
    done = subprocess.run(
        [sys.executable, str(DEMO), "--bootstrap", broker.bootstrap, "--impressions", impressions],
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
    # SIGTERM: worker-1 runs its tasks while the others warm them up, then leaves.
    assert re.search(
        r"^ *[\d.]+ s  worker-1 stopping: every task handed off warm in ", done.stdout, re.M
    ), output
    learned = re.findall(r"worker-3 learns (\S+)$", done.stdout, re.M)
    assert all(re.fullmatch(r"attribute_\d", task) for task in learned), learned
    # `streamjoin status --once` at each step, its view indented under the command.
    steps = re.findall(
        r"^ *[\d.]+ s  ([^:\n]+): \$ streamjoin status app:joins ", done.stdout, re.M
    )
    assert steps[0] == "scale-out, worker-3 in the group", output
    assert steps[-1] == "scale-in, worker-1 gone", output
    views = re.findall(r"^ {9}group ads  \w+  generation \d+", done.stdout, re.M)
    assert len(views) == len(steps), output
    # One query of the join's state, answered while the group rebalances after worker-1 left.
    assert re.search(
        r"^ *[\d.]+ s  query attribute-left \S+ via worker-2: [1-9]\d* records?, answered by "
        r"worker-[23] \((active|standby|restoring), lag (\d+ records|unknown)\)$",
        done.stdout,
        re.M,
    ), output
    # Sent to a pipe, not a terminal: lines as written, none wrapped, no progress bars.
    lines = done.stdout.splitlines()
    assert all(line.strip() for line in lines), output
    assert re.search(
        r"^remaining workers: [\d,]+ input records fetched, [\d,]+ late records \([\d,]+ "
        r"joined\), [\d,]+ dead letters$",
        done.stdout,
        re.M,
    ), output
    assert re.search(
        r"^rebalances each remaining worker went through \(assignments it received, whether or "
        r"not its tasks changed; worker-1 left earlier\): worker-2 \d+, worker-3 \d+$",
        done.stdout,
        re.M,
    ), output
    # Each task's longest pause, when, and its story: stayed, or moved from whom to whom and
    # what its new worker had to restore first.
    told = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^  task (\d) +[\d.]+ s from +[\d.]+ s  (.+)$", done.stdout, re.M)
    }
    assert sorted(told) == list(range(8)), output
    moved = [story for story in told.values() if " -> " in story]
    assert moved, output
    for story in moved:
        assert re.search(r"nothing left to restore|restored [\d,]+ records|unknown", story)
