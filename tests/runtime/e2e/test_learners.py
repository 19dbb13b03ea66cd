"""KIP-441's learners end to end: scaling out moves state to a learner first and hands the task
over only once it has caught up; scaling in with a standby resumes without a full restore.

Workers run in this process (one event loop), so the tests can watch their roles and restores.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import harness
import pytest
from aiokafka import TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent
from streamjoin.runtime.topology.app_topology import TaskId

pytestmark = [pytest.mark.broker, pytest.mark.slow]

APP_DIR = Path(__file__).resolve().parent


make_app, Running, until, send, joined, workers = (
    harness.make_app,
    harness.Running,
    harness.until,
    harness.send,
    harness.joined,
    harness.workers,
)
PARTITIONS, STATE_RECORDS = harness.PARTITIONS, harness.STATE_RECORDS


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
                first.worker.manager.buffered() == 0  # type: ignore[union-attr]
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
        await send(
            bs, f"clk-{unique}", range(PARTITIONS * STATE_RECORDS), ts0=harness.EVENT_T0 + 100_000
        )
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
        await send(bs, f"clk-{unique}", range(records), ts0=harness.EVENT_T0 + 100_000)
        seen: set[int] = set()
        deadline = time.monotonic() + 40
        while len(seen) < records and time.monotonic() < deadline:
            seen = await joined(bs, f"out-{unique}")
        assert seen == set(range(records)), log.read_text()[-3000:]
