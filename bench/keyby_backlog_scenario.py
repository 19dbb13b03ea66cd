"""The key_by backlog scenario of issue 35, shared by bench/keyby_backlog.py and the end-to-end
test (tests/runtime/e2e/test_keyby_backlog.py): 2,000 orders keyed by order id, 1,544 of them
paid, payments keyed by payment id and re-keyed by order id (bench/keyby_backlog_app.py), a
ten-minute window, default settings, workers started before the data arrives.

Two ways to load it:
  in time order      - one producer sends orders and payments in event-time order (as live
                       traffic would come, only faster);
  one after the other - `streamjoin produce` the orders, then, once the workers have
                       processed them (committed every one), `streamjoin produce` the
                       payments, as a new user does.
Measured: pairs joined of those expected, and per repartition partition the largest backward
jump of timestamps - how far a record's timestamp lies behind the newest one before it in its
partition (0: the partition is in time order).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from produce import produce_all

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "runtime" / "e2e"))

from worker_processes import Workers as WorkerProcesses

from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import committed_offsets, log_bounds

__all__ = (
    "LOADINGS",
    "PARTITIONS",
    "Scenario",
    "Workers",
    "load",
    "make_topics",
    "read_joined",
)

BENCH_DIR = Path(__file__).resolve().parent
APP = "keyby_backlog_app:shop"
PARTITIONS = 4
ORDERS = 2_000
PAID = 1_544
LOADINGS = ("in time order", "one after the other")


@dataclass(frozen=True)
class Order:
    order_id: str
    ts: int


@dataclass(frozen=True)
class Payment:
    payment_id: str
    order_id: str
    ts: int


BATCH_MS = 3_000_000
"""Event time between the starts of two batches loaded into the same topics: 50 minutes, more
than a batch spans (33 min of orders, payments up to 9 min later)."""
START = int(time.time() * 1000) - 4 * 3_600_000
"""The first batch's first order: four hours ago (a real broker expires window changelog
records a day of wall-clock time after their event time, and records stamped in the future
are refused)."""


@dataclass
class Scenario:
    """The data: an order a second, and for 1,544 of them a payment 5 s to 9 min after its
    order (inside the ten-minute window). Batch n (ids "o<n>-..", "p<n>-..") starts n x 50
    minutes after the first, so batches can follow one another into the same topics."""

    suffix: str
    batch: int = 0
    orders: list[Order] = field(init=False)
    payments: list[Payment] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(35)
        t0, b = START + self.batch * BATCH_MS, self.batch
        self.orders = [Order(f"o{b}-{i}", t0 + i * 1_000) for i in range(ORDERS)]
        paid = sorted(rng.sample(range(ORDERS), PAID))
        self.payments = [
            Payment(f"p{b}-{n}", f"o{b}-{i}", t0 + i * 1_000 + rng.randint(5_000, 540_000))
            for n, i in enumerate(paid)
        ]

    @property
    def expected(self) -> int:
        return len(self.payments)

    def topic(self, name: str) -> str:
        return f"{name}-{self.suffix}"

    @property
    def repartition_topic(self) -> str:
        return f"backlog-{self.suffix}-paid-right-repartition"

    def in_time_order(self) -> Iterator[tuple[str, bytes, bytes, int]]:
        records = [
            (o.ts, self.topic("orders"), o.order_id, {"order_id": o.order_id}) for o in self.orders
        ] + [
            (
                p.ts,
                self.topic("payments"),
                p.payment_id,
                {"payment_id": p.payment_id, "order_id": p.order_id},
            )
            for p in self.payments
        ]
        for ts, topic, key, value in sorted(records, key=lambda r: r[0]):
            yield topic, key.encode(), json.dumps(value).encode(), ts


async def make_topics(bootstrap: str, scenario: Scenario) -> None:
    await ensure_topics(
        bootstrap,
        [TopicSpec(scenario.topic(t), PARTITIONS) for t in ("orders", "payments", "paid-orders")],
    )


def _produce_command(bootstrap: str, topic: str, key_field: str, lines: list[str]) -> None:
    """`streamjoin produce TOPIC --key-field F --timestamp-field ts`, as a user types it."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "streamjoin",
            "produce",
            topic,
            "--key-field",
            key_field,
            "--timestamp-field",
            "ts",
            "--bootstrap",
            bootstrap,
        ],
        input="\n".join(lines) + "\n",
        text=True,
        check=True,
        capture_output=True,
        timeout=120,
    )


async def load(bootstrap: str, scenario: Scenario, loading: str) -> None:
    if loading == "in time order":
        await produce_all(bootstrap, scenario.in_time_order())
        return
    orders = [json.dumps({"order_id": o.order_id, "ts": o.ts}) for o in scenario.orders]
    payments = [
        json.dumps({"payment_id": p.payment_id, "order_id": p.order_id, "ts": p.ts})
        for p in scenario.payments
    ]
    await asyncio.to_thread(
        _produce_command, bootstrap, scenario.topic("orders"), "order_id", orders
    )
    await _until_committed(bootstrap, scenario, scenario.topic("orders"), within_s=180)
    await asyncio.to_thread(
        _produce_command, bootstrap, scenario.topic("payments"), "payment_id", payments
    )


async def _until_committed(bootstrap: str, scenario: Scenario, topic: str, within_s: float) -> None:
    """Until the workers' group has committed every record of `topic`."""
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = {(b.topic, b.partition): b.end for b in await log_bounds(bootstrap, partitions)}
    deadline = time.monotonic() + within_s
    while True:
        committed = await committed_offsets(bootstrap, f"backlog-{scenario.suffix}", partitions)
        if all(committed[tp] >= ends[tp.topic, tp.partition] for tp in partitions):
            return
        assert time.monotonic() < deadline, f"{topic} not processed within {within_s} s"
        await asyncio.sleep(0.5)


async def read_joined(
    bootstrap: str, scenario: Scenario, *, settle_s: float, within_s: float
) -> set[str]:
    """Orders joined with their payment, read until every one is there or nothing new has come
    for `settle_s` (at most `within_s`)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    joined: set[str] = set()
    try:
        tps = [TopicPartition(scenario.topic("paid-orders"), p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + within_s
        quiet_since = time.monotonic()
        while len(joined) < scenario.expected and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            if batch:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > settle_s:
                break
            mine = f"o{scenario.batch}-"
            for records in batch.values():
                joined.update(
                    order
                    for r in records
                    if (order := json.loads(r.value)["order_id"]).startswith(mine)
                )
    finally:
        await consumer.stop()
    return joined


class RepartitionTail:
    """Reads the repartition topic from its start while the workers run (a broker with
    DeleteRecords purges what the join has committed), keeping each partition's largest
    backward jump of timestamps."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.records = 0
        self.jumps = [0] * PARTITIONS
        self._newest: list[int | None] = [None] * PARTITIONS
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._read())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _read(self) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            while self.topic not in await consumer.topics():  # noqa: ASYNC110 - the worker creates it
                await asyncio.sleep(0.2)
            tps = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while True:
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    for r in records:
                        newest = self._newest[tp.partition]
                        if newest is not None and r.timestamp < newest:
                            self.jumps[tp.partition] = max(
                                self.jumps[tp.partition], newest - r.timestamp
                            )
                        self._newest[tp.partition] = max(newest or r.timestamp, r.timestamp)
                        self.records += 1
        finally:
            await consumer.stop()


class Workers(WorkerProcesses):
    """`streamjoin worker keyby_backlog_app:shop` processes with the product's default settings
    (tests/runtime/e2e/worker_processes.Workers with no test options), each with its own state
    directory and log; `source` runs another checkout's streamjoin."""

    def __init__(self, bootstrap: str, suffix: str, tmp: Path, source: Path | None = None) -> None:
        super().__init__(
            bootstrap,
            suffix,
            tmp,
            APP,
            app_dir=BENCH_DIR,
            defaults=(),
            source=source,
            stop_within_s=60,
        )

    def running_tasks(self, name: str) -> set[str]:
        """Tasks the worker's log says run now (started and not closed, suspended or lost)."""
        running: set[str] = set()
        for line in self.log(name).splitlines():
            words = line.split()
            if "task" not in words:
                continue
            at = words.index("task")
            if at + 2 >= len(words):
                continue
            task, state = words[at + 1], " ".join(words[at + 2 : at + 4])
            if state == "is running":
                running.add(task)
            elif words[at + 2] in ("closed", "suspended", "lost"):
                running.discard(task)
        return running

    async def until_all_run(self, tasks: int, within_s: float) -> None:
        """Until every task runs on some worker and each worker runs at least one."""
        deadline = time.monotonic() + within_s
        while True:
            running = {name: self.running_tasks(name) for name in self.processes}
            if all(running.values()) and len(set().union(*running.values())) >= tasks:
                return
            assert time.monotonic() < deadline, f"tasks never all ran: {running}\n{self.logs()}"
            await asyncio.sleep(0.2)
