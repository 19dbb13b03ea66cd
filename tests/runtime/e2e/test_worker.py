"""The worker end to end on the embedded broker: several `streamjoin worker` processes share the
tasks; every joined record arrives, even when one worker is killed -9 under load."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

pytestmark = [pytest.mark.broker, pytest.mark.slow]

APP_DIR = Path(__file__).resolve().parent
PARTITIONS = 4


class Workers:
    def __init__(self, bootstrap: str, suffix: str, tmp: Path) -> None:
        self.bootstrap, self.suffix, self.tmp = bootstrap, suffix, tmp
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        env = {**os.environ, "STREAMJOIN_TEST_SUFFIX": self.suffix}
        with open(self.tmp / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streamjoin",
                    "worker",
                    "clicks_app:joins",
                    "--app-dir",
                    str(APP_DIR),
                    "--bootstrap",
                    self.bootstrap,
                    "--state-dir",
                    str(self.tmp / f"state-{name}"),
                    "--commit-interval",
                    "0.5",
                    "--session-timeout",
                    "6",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # noqa: PLW1509
            )

    def signal(self, name: str, signum: int) -> None:
        self.processes[name].send_signal(signum)

    def stop_all(self) -> dict[str, int]:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = {}
        for name, process in self.processes.items():
            try:
                codes[name] = process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[name] = process.wait()
        return codes

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-30:])
            for p in sorted(self.tmp.glob("*.log"))
        )


async def produce(bootstrap: str, suffix: str, auctions: range, pace_s: float) -> None:
    """An impression per auction and a click 1-30 s (event time) later, in time order."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        base = 1_700_000_000_000
        events = []
        for a in auctions:
            ts = base + a * 100
            events.append((ts, f"impressions-{suffix}", a))
            events.append((ts + 1_000 + (a * 7919) % 29_000, f"clicks-{suffix}", a))
        for i, (ts, topic, a) in enumerate(sorted(events)):
            value = json.dumps({"auction": a, "ts": ts}).encode()
            await producer.send(topic, value, key=f"a{a}".encode(), timestamp_ms=ts)
            if pace_s and i % 100 == 99:
                await asyncio.sleep(pace_s)
        await producer.flush()
    finally:
        await producer.stop()


async def read_joined(bootstrap: str, suffix: str, want: int, within_s: float) -> Counter[int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    seen: Counter[int] = Counter()
    try:
        tps = [TopicPartition(f"attributed-{suffix}", p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + within_s
        while len(seen) < want and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                seen.update(json.loads(r.value)["auction"] for r in records)
    finally:
        await consumer.stop()
    return seen


async def _topics(bootstrap: str, suffix: str) -> None:
    await ensure_topics(
        bootstrap,
        [TopicSpec(f"{t}-{suffix}", PARTITIONS) for t in ("impressions", "clicks", "attributed")],
    )


async def test_two_workers_join_every_pair(broker: Broker, unique: str, tmp_path: Path) -> None:
    await _topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2")
    try:
        await produce(broker.bootstrap, unique, range(2_000), pace_s=0)
        seen = await read_joined(broker.bootstrap, unique, 2_000, within_s=60)
    finally:
        codes = workers.stop_all()
    assert len(seen) == 2_000, workers.logs()
    assert codes == {"w1": 0, "w2": 0}, workers.logs()


async def test_kill_9_under_load_loses_no_joined_record(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await _topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2")
    try:
        producing = asyncio.create_task(
            produce(broker.bootstrap, unique, range(6_000), pace_s=0.12)
        )
        await asyncio.sleep(7)
        assert not producing.done(), "the kill must happen under load"
        workers.signal("w1", signal.SIGKILL)
        await producing
        seen = await read_joined(broker.bootstrap, unique, 6_000, within_s=90)
    finally:
        workers.stop_all()
    missing = sorted(set(range(6_000)) - seen.keys())
    duplicates = sum(n - 1 for n in seen.values())
    print(f"kill -9: 6000 expected, {len(missing)} missing, {duplicates} duplicates")
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"


async def test_a_worker_started_on_a_backlog_joins_every_pair(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """Both topics already hold their records when the worker starts: neither side may run so
    far ahead of the other that the other's records become late."""
    await _topics(broker.bootstrap, unique)
    await produce(broker.bootstrap, unique, range(30_000), pace_s=0)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1")
    try:
        seen = await read_joined(broker.bootstrap, unique, 30_000, within_s=120)
    finally:
        workers.stop_all()
    missing = 30_000 - len(seen)
    assert not missing, f"{missing} pairs missing\n{workers.logs()}"
