"""Exactly-once on Apache Kafka: `streamjoin worker --processing-guarantee exactly_once`
processes killed, stalled or failing in the middle of a commit; a `read_committed` reader of the
output sees every joined pair exactly once."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest
import test_rekey as rekey
import worker_processes as processes

from streamjoin.broker import Broker
from streamjoin.runtime.output.transaction_state import FAULT_ENV

pytestmark = [pytest.mark.broker, pytest.mark.slow]

EOS = ("--processing-guarantee", "exactly_once")
Workers, produce = processes.Workers, processes.produce


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Transactions need Apache Kafka (Tansu has none)."""
    return kafka_broker


async def _committed(broker: Broker, suffix: str, want: int) -> Counter[int]:
    return await processes.read_joined(
        broker.bootstrap, suffix, want, within_s=90, isolation_level="read_committed", settle_s=4
    )


def _report(seen: Counter[int], want: int) -> tuple[list[int], dict[int, int]]:
    missing = sorted(set(range(want)) - seen.keys())
    repeated = {a: n for a, n in seen.items() if n > 1}
    return missing, repeated


async def test_kill_9_and_a_replacement_repeat_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1", *EOS)
    workers.start("w2", *EOS)
    try:
        producing = asyncio.create_task(produce(broker.bootstrap, unique, range(4_000), pace_s=0.1))
        await asyncio.sleep(6)
        assert not producing.done(), "the kill must happen under load"
        workers.signal("w1", signal.SIGKILL)
        await asyncio.sleep(1)
        # Same state directory, so the same transactional id: it fences the killed one.
        workers.start("w1-again", *EOS, state="w1")
        await producing
        seen = await _committed(broker, unique, 4_000)
        everything = await processes.read_joined(broker.bootstrap, unique, 4_000, within_s=5)
    finally:
        workers.stop_all()
    missing, repeated = _report(seen, 4_000)
    print(
        f"kill -9 under exactly-once: {len(missing)} missing, {len(repeated)} repeated "
        f"(read_uncommitted sees {sum(everything.values()) - len(everything)} repeats)"
    )
    assert not missing, f"missing {missing[:20]}\n{workers.logs()}"
    assert not repeated, f"repeated {list(repeated.items())[:20]}\n{workers.logs()}"


async def test_a_failure_in_the_middle_of_a_commit_leaves_no_partial_output(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """The 3rd transaction with input offsets fails after its outputs and offsets are sent: it
    is aborted, the worker starts over from the committed offsets, and only a read_uncommitted
    reader sees the aborted outputs."""
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1", *EOS, env={FAULT_ENV: "3"})
    try:
        await produce(broker.bootstrap, unique, range(3_000), pace_s=0.15)
        seen = await _committed(broker, unique, 3_000)
        everything = await processes.read_joined(broker.bootstrap, unique, 3_000, within_s=5)
    finally:
        codes = workers.stop_all()
    logs = workers.logs()
    missing, repeated = _report(seen, 3_000)
    # The whole log: the failure comes early, and what the restarted worker logs fills the tail.
    assert "injected failure" in workers.log("w1"), logs
    assert not missing, f"missing {missing[:20]}\n{logs}"
    assert not repeated, f"repeated {list(repeated.items())[:20]}\n{logs}"
    assert sum(everything.values()) > len(everything), "the aborted outputs were never written"
    assert codes == {"w1": 0}, logs


async def test_a_worker_stalled_past_its_session_is_fenced_and_repeats_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """SIGSTOP past the session timeout (6 s): the other worker takes the tasks over; on
    SIGCONT the stalled one finds its transaction fenced and rejoins without a commit."""
    await processes.make_topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path)
    workers.start("w1", *EOS)
    workers.start("w2", *EOS)
    try:
        producing = asyncio.create_task(
            produce(broker.bootstrap, unique, range(6_000), pace_s=0.15)
        )
        await workers.wait_for_log("w1", "is running", within_s=60)
        await asyncio.sleep(3)  # w1 has an open transaction with outputs in it
        assert not producing.done(), "the stall must happen under load"
        workers.signal("w1", signal.SIGSTOP)
        await asyncio.sleep(14)  # past the session (6 s) and the transaction timeout (10 s)
        workers.signal("w1", signal.SIGCONT)
        await workers.wait_for_log("w1", "joins its group again", within_s=30)
        await producing
        seen = await _committed(broker, unique, 6_000)
    finally:
        codes = workers.stop_all()
    logs = workers.logs()
    missing, repeated = _report(seen, 6_000)
    assert not missing, f"missing {missing[:20]}\n{logs}"
    assert not repeated, f"repeated {list(repeated.items())[:20]}\n{logs}"
    assert codes == {"w1": 0, "w2": 0}, logs


async def test_rekeyed_and_chained_joins_repeat_nothing_after_a_kill_9(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """Repartition topics and a join reading another's output, under exactly-once: a worker
    killed mid-stream and replaced; every revenue record exactly once."""
    await rekey._topics(broker.bootstrap, unique)
    workers = Workers(broker.bootstrap, unique, tmp_path, app=rekey.APP)
    workers.start("w1", *EOS)
    workers.start("w2", *EOS)
    try:
        producing = asyncio.create_task(
            rekey.produce(broker.bootstrap, unique, range(3_000), pace_s=0.1)
        )
        await workers.wait_for_log("w1", "is running", within_s=60)
        await asyncio.sleep(2)
        assert not producing.done(), "the kill must happen under load"
        workers.signal("w1", signal.SIGKILL)
        workers.start("w1-again", *EOS, state="w1")
        await producing
        seen = await rekey.read_revenue(
            broker.bootstrap,
            unique,
            3_000,
            within_s=90,
            isolation_level="read_committed",
            settle_s=4,
        )
    finally:
        workers.stop_all()
    missing, repeated = _report(seen, 3_000)
    assert not missing, f"missing {missing[:20]}\n{workers.logs()}"
    assert not repeated, f"repeated {list(repeated.items())[:20]}\n{workers.logs()}"
