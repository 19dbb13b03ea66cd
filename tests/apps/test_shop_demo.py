"""The shop demo (re-keyed and chained joins, a global table, a foreign-key join) run as users
run it, workers joining and leaving, on the session broker; then its four joins recomputed over
the same topics as users run Spark in apps/shop (`streamjoin backfill app:joins`, one job for
the whole app, and `streamjoin audit app:joins`): the same records as the workers wrote, key by
key, and a clean audit."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamjoin.broker import Broker
from streamjoin.kafka.connection import connect
from streamjoin.kafka.watermarks import log_bounds, topic_partitions
from streamjoin.spark.availability import java_missing

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(1200)]

SHOP = Path(__file__).resolve().parents[2] / "apps" / "shop"
DEMO = SHOP / "demo.py"
STREAMJOIN = str(Path(sys.executable).with_name("streamjoin"))
OUTPUTS = {
    "pay": "shop-paid",
    "ship": "shop-shipped",
    "locate": "shop-located",
    "bill": "shop-order-customers",
}


def _check_demo_output(done: subprocess.CompletedProcess[str]) -> None:
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


async def _topic(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of `topic`, in offset order per partition."""
    partitions = await topic_partitions(bootstrap, [topic])
    bounds = {(b.topic, b.partition): b for b in await log_bounds(bootstrap, partitions)}
    consumer = connect(bootstrap).consumer(enable_auto_commit=False)
    await consumer.start()
    found: list[tuple[bytes, bytes | None]] = []
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        for tp in partitions:
            end = bounds[tp.topic, tp.partition].end
            while await consumer.position(tp) < end:
                for record in (await consumer.getmany(tp, timeout_ms=1_000)).get(tp, []):
                    if record.offset < end:
                        found.append((record.key, record.value))
    finally:
        await consumer.stop()
    return found


def _by_key(records: list[tuple[bytes, bytes | None]], table: bool) -> dict[bytes, Any]:
    """Key -> the set of values (a stream; duplicates of at-least-once replays are one), or
    the last value (a table)."""
    if table:
        return {k: None if v is None else json.loads(v) for k, v in records}
    values: defaultdict[bytes, set[str]] = defaultdict(set)
    for key, value in records:
        assert value is not None
        values[key].add(json.dumps(json.loads(value), sort_keys=True))
    return dict(values)


def _streamjoin(*arguments: str) -> subprocess.CompletedProcess[str]:
    """A command as typed in apps/shop."""
    return subprocess.run(
        [STREAMJOIN, *arguments], cwd=SHOP, capture_output=True, text=True, timeout=600
    )


def test_shop_demo_ships_every_paid_order_while_workers_come_and_go_and_spark_agrees(
    broker: Broker, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--bootstrap", broker.bootstrap, "--orders", "10000"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    _check_demo_output(done)
    missing = java_missing()
    if missing is not None:
        pytest.skip(f"the Spark half skipped: {missing}")

    bootstrap = ["--bootstrap", broker.bootstrap]
    backfill = _streamjoin("backfill", "app:joins", *bootstrap, "--output", str(tmp_path / "out"))
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    for join, topic in OUTPUTS.items():
        written = asyncio.run(_topic(broker.bootstrap, topic))
        rows = pq.read_table(tmp_path / "out" / join).to_pylist()
        table = join == "bill"
        # A foreign-key join's output is a table: its last value per key is the join of the
        # final tables; the updates in between depend on how the workers' two halves interleaved.
        assert _by_key([(r["key"], r["value"]) for r in rows], table) == _by_key(written, table)
    audit = _streamjoin("audit", "app:joins", *bootstrap)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert audit.stdout.count("OK") == len(OUTPUTS), audit.stdout
