"""The shop demo (re-keyed and chained joins, a global table, a foreign-key join) run as users
run it, workers joining and leaving, on the session broker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamjoin.broker import EmbeddedBroker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

DEMO = Path(__file__).resolve().parents[2] / "apps" / "shop" / "demo.py"


def test_shop_demo_ships_every_paid_order_while_workers_come_and_go(
    broker: EmbeddedBroker,
) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--bootstrap", broker.bootstrap, "--orders", "10000"],
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
    assert "Sub-topology 5: pay-right-repartition (4 tasks, stateless)" in done.stdout
    assert "worker-3 joins (scale-out)" in done.stdout
    assert f"located: expected={expected} present={expected} wrong=0" in done.stdout
    assert "global/shop-countries: source shop-countries (2 partitions)" in done.stdout
    assert "worker-1 leaves (scale-in)" in done.stdout
    billed = re.search(r"customers: expected=(\d+) present=(\d+) wrong=(\d+)", done.stdout)
    assert billed, output
    assert billed.groups() == ("10000", "10000", "0"), output
    assert "Source: shop-customers (3 partitions)" in done.stdout, output
    rekeyed = re.search(r"remaining workers: ([\d,]+) records re-keyed", done.stdout)
    assert rekeyed and int(rekeyed.group(1).replace(",", "")) > 0, output
