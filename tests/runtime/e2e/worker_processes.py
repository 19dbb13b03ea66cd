"""`streamjoin worker` processes on the clicks app, its traffic and its output, for the
end-to-end tests of workers and of faults."""

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
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

APP_DIR = Path(__file__).resolve().parent
PARTITIONS = 4
EVENT_T0 = int(time.time() * 1000) - 600_000
"""Event times start ten minutes ago, so that any future time within `max_future_ms` is accepted
(test_changelog_history.py shows that history much older restores as well)."""


TEST_OPTIONS = ("--commit-interval", "0.5", "--session-timeout", "6")
"""Options every test worker starts with: commits and failure detection quick enough for tests."""


class Workers:
    """`streamjoin worker` processes of one app (an app module in `app_dir`, beside this file
    by default), each with its own state directory and log; options given to `start` come
    last, so they win. Benches use it too (bench/keyby_backlog_scenario.py): with `defaults`
    empty the workers run with the product's defaults, and `source` runs another checkout's
    streamjoin (its directory goes first on PYTHONPATH), to measure the code before a change."""

    def __init__(
        self,
        bootstrap: str,
        suffix: str,
        tmp: Path,
        app: str = "clicks_app:joins",
        *,
        app_dir: Path = APP_DIR,
        defaults: tuple[str, ...] = TEST_OPTIONS,
        source: Path | None = None,
        stop_within_s: float = 30,
    ) -> None:
        self.bootstrap, self.suffix, self.tmp, self.app = bootstrap, suffix, tmp, app
        self.app_dir, self.defaults, self.source = app_dir, defaults, source
        self.stop_within_s = stop_within_s
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(
        self,
        name: str,
        *options: str,
        state: str | None = None,
        env: dict[str, str] | None = None,
        app: str | None = None,
    ) -> None:
        """`state`: the name of another worker whose state directory this one takes over (its
        replacement); `env`: more environment variables; `app`: another app than the others'."""
        env = {**os.environ, "STREAMJOIN_TEST_SUFFIX": self.suffix, **(env or {})}
        if self.source is not None:
            env["PYTHONPATH"] = str(self.source)
        with open(self.tmp / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streamjoin",
                    "worker",
                    app or self.app,
                    "--app-dir",
                    str(self.app_dir),
                    "--bootstrap",
                    self.bootstrap,
                    "--state-dir",
                    str(self.tmp / f"state-{state or name}"),
                    *self.defaults,
                    *options,
                ],
                env=env,
                cwd=self.source,
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
                codes[name] = process.wait(self.stop_within_s)
            except subprocess.TimeoutExpired:
                process.kill()
                codes[name] = process.wait()
        return codes

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    async def wait_for_log(self, name: str, text: str, within_s: float) -> None:
        """Until worker `name`'s log holds `text` (AssertionError with the logs after
        `within_s`)."""
        deadline = time.monotonic() + within_s
        while text not in self.log(name):
            assert time.monotonic() < deadline, f"{name} never logged {text!r}\n{self.logs()}"
            await asyncio.sleep(0.2)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-30:])
            for p in sorted(self.tmp.glob("*.log"))
        )


CONFIRMED_EVERY = 50
"""Records of `produce` (25 auctions: 2.5 s of event time) sent before they are confirmed."""


def click_delay_ms(auction: int) -> int:
    """How long after its impression an auction's click comes (event time): 1-30 s."""
    return 1_000 + (auction * 7919) % 29_000


async def produce(
    bootstrap: str,
    suffix: str,
    auctions: range,
    pace_s: float,
    confirm_every: int = CONFIRMED_EVERY,
) -> None:
    """An impression per auction and a click 1-30 s (event time) later, in time order; sends
    wait out a broker restart.

    Each `confirm_every` records are on the broker before the next are sent (0: no such wait,
    as a plain producer sends): a producer's batches for different partitions may otherwise
    reach the broker hundreds of ms apart on a loaded machine, seconds of this traffic's event
    time, and a click arriving more than the window's grace (5 s) behind the impressions
    processed meanwhile is late, by design (`max_task_idle_ms` 0 does not wait for
    producers)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", request_timeout_ms=180_000
    )
    await producer.start()
    try:
        base = EVENT_T0
        events = []
        for a in auctions:
            ts = base + a * 100
            events.append((ts, f"impressions-{suffix}", a))
            events.append((ts + click_delay_ms(a), f"clicks-{suffix}", a))
        for i, (ts, topic, a) in enumerate(sorted(events)):
            value = json.dumps({"auction": a, "ts": ts}).encode()
            await producer.send(topic, value, key=f"a{a}".encode(), timestamp_ms=ts)
            if confirm_every and i % confirm_every == confirm_every - 1:
                await producer.flush()
            if pace_s and i % 100 == 99:
                await asyncio.sleep(pace_s)
        await producer.flush()
    finally:
        await producer.stop()


async def read_sent(bootstrap: str, suffix: str) -> dict[str, set[int]]:
    """The auctions in each input topic (to tell a lost input from a lost join)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: dict[str, set[int]] = {"impressions": set(), "clicks": set()}
    try:
        tps = [TopicPartition(f"{t}-{suffix}", p) for t in found for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while batch := await consumer.getmany(timeout_ms=2_000):
            for tp, records in batch.items():
                found[tp.topic.rsplit("-", 1)[0]].update(
                    json.loads(r.value)["auction"] for r in records
                )
    finally:
        await consumer.stop()
    return found


async def read_outputs(
    bootstrap: str,
    suffix: str,
    want: int,
    within_s: float,
    isolation_level: str = "read_uncommitted",
    settle_s: float = 0.0,
    output: str = "attributed",
    field: str = "auction",
) -> dict[int, list[tuple[int, dict[str, Any]]]]:
    """Every output of `output` (timestamp, value) by its `field` (the auction), read until
    `want` auctions are seen (or `within_s` passed), then until nothing more arrives for
    `settle_s` (so late repeats are counted)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation_level
    )
    await consumer.start()
    seen: dict[int, list[tuple[int, dict[str, Any]]]] = {}

    def keep(records: list[Any]) -> None:
        for record in records:
            value = json.loads(record.value)
            seen.setdefault(value[field], []).append((record.timestamp, value))

    try:
        tps = [TopicPartition(f"{output}-{suffix}", p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + within_s
        while len(seen) < want and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                keep(records)
        while settle_s and (batch := await consumer.getmany(timeout_ms=int(settle_s * 1000))):
            for records in batch.values():
                keep(records)
    finally:
        await consumer.stop()
    return seen


async def read_joined(
    bootstrap: str, suffix: str, want: int, within_s: float, **options: Any
) -> Counter[int]:
    """How often each auction was joined (`read_outputs` with these `options`, counted)."""
    outputs = await read_outputs(bootstrap, suffix, want, within_s, **options)
    return Counter({auction: len(values) for auction, values in outputs.items()})


async def make_topics(bootstrap: str, suffix: str) -> None:
    await ensure_topics(
        bootstrap,
        [TopicSpec(f"{t}-{suffix}", PARTITIONS) for t in ("impressions", "clicks", "attributed")],
    )
