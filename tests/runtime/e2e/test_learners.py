"""Seed 001 end to end: scaling out moves state to a learner first and hands the task over only
once it has caught up; scaling in with a standby resumes without a full restore.

Workers run in this process (one event loop), so the tests can watch their roles and restores.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin import App
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent
from streamjoin.runtime.topology import TaskId
from streamjoin.runtime.worker import Worker, WorkerOptions
from streamjoin.state.events import RestoreCompleted, StateEvent

pytestmark = [pytest.mark.broker, pytest.mark.slow]

APP_DIR = Path(__file__).resolve().parent
PARTITIONS = 2
STATE_RECORDS = 600  # impressions per partition before the second worker arrives


def _load_make_app() -> Callable[..., App]:
    spec = importlib.util.spec_from_file_location("learn_app", APP_DIR / "learn_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_app  # type: ignore[no-any-return]


make_app = _load_make_app()


class Running:
    """A worker started in this event loop, with the restores it completed."""

    def __init__(self, app: App, bootstrap: str, state_dir: Path) -> None:
        options = WorkerOptions(
            bootstrap=bootstrap,
            state_dir=state_dir,
            commit_interval_s=0.5,
            session_timeout_ms=6_000,
            heartbeat_interval_ms=500,
        )
        self.worker = Worker(app, options)
        self.restored: dict[str, int] = {}
        self.revoked: list[frozenset[Any]] = []
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.worker.run())
        await asyncio.wait_for(self.worker.started.wait(), 30)
        assert self.worker.state is not None and self.worker.manager is not None
        self.worker.state.subscribe(self._on_event)
        manager = self.worker.manager
        original = manager.on_revoked

        async def on_revoked(partitions: frozenset[Any]) -> None:
            self.revoked.append(partitions)
            await original(partitions)

        manager.on_revoked = on_revoked  # type: ignore[method-assign]

    def _on_event(self, event: StateEvent) -> None:
        if isinstance(event, RestoreCompleted):
            self.restored[event.task_id] = event.restored

    def running_tasks(self) -> set[TaskId]:
        manager = self.worker.manager
        if manager is None:
            return set()
        return {t for t, a in manager.active.items() if a.task is not None}

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.worker.stop()
            await asyncio.wait_for(self.task, 60)


async def until(condition: Callable[[], bool], within: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def send(bootstrap: str, topic: str, auctions: range, ts0: int = 1_700_000_000_000) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for a in auctions:
            value = json.dumps({"auction": a}).encode()
            await producer.send(
                topic, value, key=f"a{a}".encode(), timestamp_ms=ts0 + a, partition=a % PARTITIONS
            )
        await producer.flush()
    finally:
        await producer.stop()


async def joined(bootstrap: str, topic: str) -> set[int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    seen: set[int] = set()
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while True:
            batch = await consumer.getmany(timeout_ms=1_000)
            if not batch:
                return seen
            for records in batch.values():
                seen.update(json.loads(r.value)["auction"] for r in records)
    finally:
        await consumer.stop()


@contextlib.asynccontextmanager
async def workers(*running: Running) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for r in running:
            with contextlib.suppress(Exception):
                await r.stop()


async def test_scale_out_warms_a_learner_then_hands_over_with_nothing_to_restore(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = make_app(unique, acceptable_recovery_lag=0, probing_rebalance_interval_s=600)
    await ensure_topics(bs, [TopicSpec(f"{t}-{unique}", PARTITIONS) for t in ("imp", "clk", "out")])
    first, second = Running(app, bs, tmp_path / "w1"), Running(app, bs, tmp_path / "w2")
    async with workers(first, second):
        await first.start()
        tasks = {TaskId("attribute", p) for p in range(PARTITIONS)}
        await until(lambda: first.running_tasks() == tasks, 30, "first worker runs both tasks")
        await send(bs, f"imp-{unique}", range(PARTITIONS * STATE_RECORDS))
        await until(
            lambda: (
                all(
                    not a.task or not a.task.buffered()
                    for a in first.worker.manager.active.values()
                )  # type: ignore[union-attr]
                and first.worker.consumer.lag(TopicPartition(f"imp-{unique}", 0)) == 0
            ),  # type: ignore[union-attr]
            30,
            "state built",
        )
        await asyncio.sleep(1.5)  # a commit interval: state flushed to the changelog

        await second.start()
        roles = second.worker.manager.roles  # type: ignore[union-attr]
        await until(lambda: roles.roles().learner != frozenset(), 40, "a learner on the new worker")
        learner = next(iter(roles.roles().learner))
        assert first.running_tasks() == tasks, "no active moved while the learner warms up"
        assert second.running_tasks() == set()

        handed_over = await until(lambda: learner in second.running_tasks(), 40, "hand-off")
        assert second.restored[str(learner)] == 0, "the learner had everything at hand-off"
        stayed = tasks - {learner}
        assert first.running_tasks() == stayed
        moved = {TopicPartition(t, learner.partition) for t in (f"imp-{unique}", f"clk-{unique}")}
        revoked = set().union(*first.revoked) if first.revoked else set()
        assert {(tp.topic, tp.partition) for tp in revoked} == {
            (tp.topic, tp.partition) for tp in moved
        }, "only the moved task's partitions were revoked: the task that stays never paused"
        print(
            f"hand-off {handed_over:.1f} s after the learner was assigned (probing interval 600 s)"
        )

        # Clicks come after every impression in event time (earlier ones would be late).
        await send(bs, f"clk-{unique}", range(PARTITIONS * STATE_RECORDS), ts0=1_700_000_100_000)
        expected = set(range(PARTITIONS * STATE_RECORDS))
        seen: set[int] = set()
        deadline = time.monotonic() + 30
        while seen != expected and time.monotonic() < deadline:
            seen = await joined(bs, f"out-{unique}")
        assert seen == expected


async def test_scale_in_resumes_on_the_standby_without_a_full_restore(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = make_app(unique, num_standby_replicas=1, acceptable_recovery_lag=100)
    await ensure_topics(bs, [TopicSpec(f"{t}-{unique}", PARTITIONS) for t in ("imp", "clk", "out")])
    first, second = Running(app, bs, tmp_path / "w1"), Running(app, bs, tmp_path / "w2")
    async with workers(first, second):
        await first.start()
        await second.start()
        await until(
            lambda: len(first.running_tasks()) == 1 and len(second.running_tasks()) == 1,
            60,
            "one task on each worker",
        )
        await send(bs, f"imp-{unique}", range(PARTITIONS * STATE_RECORDS))
        await asyncio.sleep(4)  # processed, committed, and tailed by the standbys
        [leaving_task] = first.running_tasks()
        assert leaving_task in second.worker.manager.roles.standby  # type: ignore[union-attr]
        await first.stop()
        await until(lambda: len(second.running_tasks()) == 2, 40, "the standby takes over")
        restored = second.restored[str(leaving_task)]
        print(f"standby promoted: restored {restored} of {STATE_RECORDS} records")
        assert restored < STATE_RECORDS // 10


def start_worker_process(
    bootstrap: str, suffix: str, state_dir: Path, log: Path
) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamjoin",
                "worker",
                "learn_app:joins",
                "--app-dir",
                str(APP_DIR),
                "--bootstrap",
                bootstrap,
                "--state-dir",
                str(state_dir),
                "--session-timeout",
                "6",
            ],
            env={**os.environ, "STREAMJOIN_TEST_SUFFIX": suffix},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # noqa: PLW1509
        )


async def test_a_worker_killed_while_its_learner_restores_loses_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = make_app(unique, acceptable_recovery_lag=0)
    await ensure_topics(bs, [TopicSpec(f"{t}-{unique}", PARTITIONS) for t in ("imp", "clk", "out")])
    first = Running(app, bs, tmp_path / "w1")
    records = 20_000
    async with workers(first):
        await first.start()
        tasks = {TaskId("attribute", p) for p in range(PARTITIONS)}
        await until(lambda: first.running_tasks() == tasks, 30, "first worker runs both tasks")
        await send(bs, f"imp-{unique}", range(records))
        await asyncio.sleep(3)
        log = tmp_path / "w2.log"
        second = start_worker_process(bs, unique, tmp_path / "w2", log)
        try:
            assignor = first.worker.manager.roles.assignor  # type: ignore[union-attr]

            def learner_assigned() -> bool:
                plan = assignor.last_plan
                return plan is not None and any(c.learner for c in plan.clients.values())

            await until(learner_assigned, 40, "a learner on the second worker")
        finally:
            second.send_signal(signal.SIGKILL)
            second.wait()
        assert first.running_tasks() == tasks, "nothing moved before the learner caught up"

        def converged() -> bool:
            plan = assignor.last_plan
            return (
                plan is not None
                and len(plan.clients) == 1
                and not plan.followup
                and first.running_tasks() == tasks
            )

        await until(converged, 60, "the group converges on the survivor")
        await send(bs, f"clk-{unique}", range(records), ts0=1_700_000_100_000)
        seen: set[int] = set()
        deadline = time.monotonic() + 40
        while len(seen) < records and time.monotonic() < deadline:
            seen = await joined(bs, f"out-{unique}")
        assert seen == set(range(records)), log.read_text()[-3000:]
