"""`streamjoin spark-stream` as a user runs it (Spark's Kafka connector, the default), over one
checkpoint: a run with --available-now, new records, a running query stopped by SIGTERM, more
records, a last run: every result is in the Parquet output exactly once. And the one-line
refusals."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from aiokafka import AIOKafkaProducer
from typer.testing import CliRunner

from streamjoin.broker import Broker
from streamjoin.cli import app as cli
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(900)]

STREAMJOIN = str(Path(sys.executable).with_name("streamjoin"))
ROUND = 40
"""Matching pairs produced per round."""
APP = """
import streamjoin
from streamjoin import JoinWindows

app = streamjoin.App("sstream-{s}")
left = app.topic("ssl-{s}", partitions=2)
right = app.topic("ssr-{s}", partitions=2)
table = app.table("sst-{s}")


@app.join(left, right, window=JoinWindows(before=0, after=1000), into="sso-{s}")
def pair(l, r):
    return {{"l": l["id"], "r": r["id"]}}


@app.join(left, table, into="ssx-{s}")
def enrich(l, r):
    return l
"""


async def _produce(bootstrap: str, suffix: str, round_: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i in range(round_ * ROUND, (round_ + 1) * ROUND):
            ts = 1_000_000 + i * 100
            key = f"k{i}".encode()
            await producer.send(
                f"ssl-{suffix}", json.dumps({"id": i}).encode(), key=key, timestamp_ms=ts
            )
            await producer.send(
                f"ssr-{suffix}", json.dumps({"id": -i}).encode(), key=key, timestamp_ms=ts + 5
            )
        await producer.flush()
    finally:
        await producer.stop()


def _command(tmp: Path, bootstrap: str, *extra: str) -> list[str]:
    return [
        STREAMJOIN,
        "spark-stream",
        "app:app",
        "--join",
        "pair",
        "--bootstrap",
        bootstrap,
        "--checkpoint",
        str(tmp / "checkpoint"),
        "--output",
        str(tmp / "out"),
        "--master",
        "local[2]",
        *extra,
    ]


def _run(tmp: Path, bootstrap: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = _command(tmp, bootstrap, *extra)
    return subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=400)


def _written(tmp: Path) -> list[int]:
    """The left ids in the Parquet output, as Spark's file sink committed them (its log names
    each file once per batch log and again in each compacted log)."""
    committed: set[str] = set()
    for log in (tmp / "out" / "_spark_metadata").iterdir():
        if not log.name[0].isdigit():  # .N.crc: the file system's checksums
            continue
        for line in log.read_text().splitlines()[1:]:
            committed.add(json.loads(line)["path"].removeprefix("file://"))
    rows = ds.dataset(sorted(committed), format="parquet").to_table().to_pylist()
    return sorted(json.loads(row["value"])["l"] for row in rows)


def _wait_for_a_batch(process: subprocess.Popen[str], log: Path, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while "batch " not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.5)


def test_restarts_and_sigterm_lose_nothing_and_write_nothing_twice(
    broker: Broker, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    bootstrap = broker.bootstrap
    (tmp_path / "app.py").write_text(APP.format(s=suffix))
    topics = [f"ssl-{suffix}", f"ssr-{suffix}"]
    asyncio.run(ensure_topics(bootstrap, [TopicSpec(t, 2) for t in topics]))

    asyncio.run(_produce(bootstrap, suffix, 0))
    first = _run(tmp_path, bootstrap, "--available-now")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "batch 0: " in first.stdout, first.stdout
    assert _written(tmp_path) == list(range(ROUND))

    asyncio.run(_produce(bootstrap, suffix, 1))
    log = tmp_path / "running.log"
    with log.open("w") as out:
        running = subprocess.Popen(
            _command(
                tmp_path, bootstrap, "--max-records-per-batch", "10", "--trigger-interval", "1s"
            ),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        _wait_for_a_batch(running, log, within_s=300)
        running.send_signal(signal.SIGTERM)
        assert running.wait(180) == 0, log.read_text()
    finally:
        if running.poll() is None:
            running.kill()
    assert "stopped; a new run" in log.read_text()
    assert "Traceback" not in log.read_text()

    asyncio.run(_produce(bootstrap, suffix, 2))
    last = _run(tmp_path, bootstrap, "--available-now")
    assert last.returncode == 0, last.stdout + last.stderr
    assert _written(tmp_path) == list(range(3 * ROUND))


def test_refusals_are_one_line(tmp_path: Path) -> None:
    suffix = "refused"
    (tmp_path / "app.py").write_text(APP.format(s=suffix))
    base = ["spark-stream", "app:app", "--app-dir", str(tmp_path), "--checkpoint", "ck"]
    runner = CliRunner()
    table = runner.invoke(cli, [*base, "--join", "enrich", "--output", "out"])
    assert table.exit_code == 2
    assert "join 'enrich' is a stream-table join" in table.output
    assert "streamjoin worker" in table.output
    neither = runner.invoke(cli, [*base, "--join", "pair"])
    assert neither.exit_code == 2
    assert "--output PATH or --into-topic" in neither.output
    interval = runner.invoke(
        cli, [*base, "--join", "pair", "--output", "o", "--trigger-interval", "soon"]
    )
    assert interval.exit_code == 2
    assert "give a duration such as 10s" in interval.output
