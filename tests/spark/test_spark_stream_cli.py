"""`streamjoin spark-stream` as a user runs it (Spark's Kafka connector, the default): over one
checkpoint, a run with --available-now, new records, a running query stopped by SIGTERM, more
records, a last run: every result is in the Parquet output exactly once. docs/spark.md's
--into-topic run: the topic holds what the worker writes. Late records dropped and counted in
the progress lines. And the one-line refusals."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from aiokafka import AIOKafkaProducer
from child_processes import alive, children
from engines import cases_in_topics, read_outputs, run_driver
from join_cases import build_app
from typer.testing import CliRunner

from streamjoin.broker import Broker
from streamjoin.cli import app as cli
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Spark's Kafka connector (the command's default source) trusts ListOffsets end offsets,
    which Tansu answers wrongly after batched produces; on Tansu use `--kafka-source python`."""
    return kafka_broker


HERE = Path(__file__).resolve().parent
STREAMJOIN = str(Path(sys.executable).with_name("streamjoin"))
ROUND = 40
"""Matching pairs produced per round."""
APP = """
import streamjoin
from streamjoin import JoinWindows

app = streamjoin.App("sstream-{s}")
left = app.topic("ssl-{s}", partitions={p})
right = app.topic("ssr-{s}", partitions={p})
table = app.table("sst-{s}", versioned=True, history_ms=60_000)


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
    (tmp_path / "app.py").write_text(APP.format(s=suffix, p=2))
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
    assert re.search(r"stopped, \d+ late records dropped .*; a new run over", log.read_text())
    assert "Traceback" not in log.read_text()

    asyncio.run(_produce(bootstrap, suffix, 2))
    last = _run(tmp_path, bootstrap, "--available-now")
    assert last.returncode == 0, last.stdout + last.stderr
    assert _written(tmp_path) == list(range(3 * ROUND))


def test_a_second_signal_stops_at_once_when_a_micro_batch_hangs(
    broker: Broker, tmp_path: Path
) -> None:
    """The first SIGTERM waits for the micro-batch under way (up to 120 s); a second ends the
    command at once, and Spark's JVM with it."""
    suffix = uuid.uuid4().hex[:8]
    hanging = APP.replace('return {{"l": l["id"], "r": r["id"]}}', "__import__('time').sleep(600)")
    (tmp_path / "app.py").write_text(hanging.format(s=suffix, p=1))
    topics = [f"ssl-{suffix}", f"ssr-{suffix}"]
    asyncio.run(ensure_topics(broker.bootstrap, [TopicSpec(t, 1) for t in topics]))
    asyncio.run(_produce(broker.bootstrap, suffix, 0))
    log = tmp_path / "running.log"
    with log.open("w") as out:
        running = subprocess.Popen(
            _command(tmp_path, broker.bootstrap, "--available-now"),
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 300
        while "streaming to" not in log.read_text():
            assert running.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        jvm = children(running.pid)
        assert jvm, "no child process: where is Spark's JVM?"
        time.sleep(3)  # into the micro-batch, whose joiner sleeps
        running.send_signal(signal.SIGTERM)
        while "stopping once the micro-batch under way is done" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        running.send_signal(signal.SIGTERM)
        assert running.wait(20) == 128 + signal.SIGTERM, log.read_text()
    finally:
        if running.poll() is None:
            running.kill()
    assert "stopping at once; the next run over this checkpoint redoes" in log.read_text()
    assert "Traceback" not in log.read_text()
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in jvm):
        assert time.monotonic() < deadline, f"Spark's JVM {jvm} outlived the command"
        time.sleep(0.5)


def test_into_topic_as_the_readme_runs_it(broker: Broker, tmp_path: Path) -> None:
    """docs/spark.md's `spark-stream app:joins --join attribute --checkpoint ... --into-topic`, on
    the outer join of null keys with its function joiner: its output topic holds the records the
    worker writes (keys, values, timestamps, provenance headers), which are the test driver's
    (test_join_cases)."""
    suffix = f"si{uuid.uuid4().hex[:8]}"
    asyncio.run(cases_in_topics(broker.bootstrap, suffix))
    join = "null-keys_fn"
    command = [STREAMJOIN, "spark-stream", "join_cases:app", "--join", join]
    command += ["--bootstrap", broker.bootstrap, "--checkpoint", str(tmp_path / "ck")]
    command += ["--into-topic", "--available-now", "--app-dir", str(HERE), "--master", "local[2]"]
    env = {**os.environ, "STREAMJOIN_TEST_SUFFIX": suffix}
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"join {join!r}: streaming to topic 'null-keys-fn-out-{suffix}'" in done.stdout
    expected = run_driver(build_app(suffix), suffix)[join]
    found = asyncio.run(read_outputs(broker.bootstrap, suffix, expected.total(), within_s=60))
    assert found[join] == expected


async def _produce_late(bootstrap: str, suffix: str, t0: int) -> None:
    """Two records a side, one partition each: the first pair matches and moves the watermark
    to t0 - 1000 (the left side's reach); the second left record is 10 s behind it."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for topic, i, ts in (
            ("ssl", 1, t0),
            ("ssr", 1, t0 + 5),
            ("ssl", 2, t0 - 10_000),
            ("ssr", 3, t0 + 10),
        ):
            key = f"k{i}".encode()
            value = json.dumps({"id": i}).encode()
            await producer.send_and_wait(
                f"{topic}-{suffix}", value, key=key, partition=0, timestamp_ms=ts
            )
    finally:
        await producer.stop()


def test_late_records_are_dropped_and_counted(broker: Broker, tmp_path: Path) -> None:
    """Two micro-batches of one record a side (the limit is per topic), and no more: the late
    left record of the second is dropped (it joins nothing) and counted in its progress line
    and in the last line."""
    suffix = uuid.uuid4().hex[:8]
    (tmp_path / "app.py").write_text(APP.format(s=suffix, p=1))
    topics = [f"ssl-{suffix}", f"ssr-{suffix}"]
    asyncio.run(ensure_topics(broker.bootstrap, [TopicSpec(t, 1) for t in topics]))
    asyncio.run(_produce_late(broker.bootstrap, suffix, int(time.time() * 1000)))
    done = _run(tmp_path, broker.bootstrap, "--available-now", "--max-records-per-batch", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    first = next(line for line in lines if line.startswith("batch 0: "))
    assert first.startswith("batch 0: 2 rows,") and first.endswith(", late 0 (0 in this run)")
    second = next(line for line in lines if line.startswith("batch 1: "))
    assert second.startswith("batch 1: 2 rows,") and second.endswith(", late 1 (1 in this run)")
    # An inner join: no closing micro-batch without data (it would only evict state).
    assert not [line for line in lines if line.startswith("batch 2: ")], done.stdout
    assert "stopped, 1 late records dropped" in done.stdout
    assert _written(tmp_path) == [1]


def test_refusals_are_one_line(tmp_path: Path) -> None:
    suffix = "refused"
    (tmp_path / "app.py").write_text(APP.format(s=suffix, p=2))
    base = ["spark-stream", "app:app", "--app-dir", str(tmp_path), "--checkpoint", "ck"]
    runner = CliRunner()
    table = runner.invoke(cli, [*base, "--join", "enrich", "--output", "out"])
    assert table.exit_code == 2
    assert "join 'enrich' is a stream-table join as of each record's time" in table.output
    assert "which Spark cannot run as a stream" in table.output
    assert "streamjoin worker" in table.output and "streamjoin backfill" in table.output
    assert "\n" not in table.output.strip()
    neither = runner.invoke(cli, [*base, "--join", "pair"])
    assert neither.exit_code == 2
    assert "--output PATH or --into-topic" in neither.output
    interval = runner.invoke(
        cli, [*base, "--join", "pair", "--output", "o", "--trigger-interval", "soon"]
    )
    assert interval.exit_code == 2
    assert "give a duration such as 10s" in interval.output
