"""Fault drills with the broker: gone for good, stalled past the session timeout, an input
topic deleted while workers run, and Apache Kafka restarted on the same port with its data or
without it. Each drill has a broker of its own, so that stopping it touches no other test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import worker_processes as processes
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import GroupCoordinatorNotAvailableError

from streamjoin.broker import EmbeddedBroker, KafkaBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

GIVE_UP_S = 6
GEO_TOPICS = ("visits", "countries", "geo")


@pytest.fixture
def own_broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as running:
        yield running


def exits(workers: processes.Workers, name: str, within_s: float) -> int | None:
    try:
        return workers.processes[name].wait(within_s)
    except processes.subprocess.TimeoutExpired:
        return None


async def topics_and_offsets(bootstrap: str, group: str) -> tuple[set[str], dict[Any, Any]]:
    """The broker's topics and the group's committed offsets (a fresh broker has no offsets
    topic until asked: its coordinator takes a few seconds to appear)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                committed = await admin.list_consumer_group_offsets(group)
                break
            except GroupCoordinatorNotAvailableError:
                assert time.monotonic() < deadline, "no group coordinator"
                await asyncio.sleep(0.5)
        return set(await admin.list_topics()), committed
    finally:
        await admin.close()


async def test_a_broker_gone_for_good_stops_busy_and_idle_workers_in_one_line(
    own_broker: EmbeddedBroker, unique: str, tmp_path: Path
) -> None:
    bootstrap = own_broker.bootstrap
    await processes.make_topics(bootstrap, unique)
    busy = processes.Workers(bootstrap, unique, tmp_path)
    idle = processes.Workers(bootstrap, f"{unique}-idle", tmp_path)
    await processes.make_topics(bootstrap, f"{unique}-idle")
    timeout = ("--broker-unavailable-timeout", str(GIVE_UP_S))
    busy.start("busy", *timeout)
    idle.start("idle", *timeout)
    try:
        producing = asyncio.create_task(
            processes.produce(bootstrap, unique, range(100_000), pace_s=0.05)
        )
        await processes.read_joined(bootstrap, unique, want=200, within_s=60)
        own_broker.stop()
        lost_at = time.monotonic()
        producing.cancel()
        # Giving up takes the timeout, a look every 2 s (5 s to answer) and a bounded close.
        codes = {name: exits(w, name, 45) for w, name in ((busy, "busy"), (idle, "idle"))}
        took = time.monotonic() - lost_at
    finally:
        busy.stop_all()
        idle.stop_all()
    assert codes == {"busy": 2, "idle": 2}, busy.logs()
    for name in ("busy", "idle"):
        lines = (tmp_path / f"{name}.log").read_text(errors="replace").splitlines()
        assert "has not answered for" in lines[-1] and "--broker-unavailable-timeout" in lines[-1]
        assert lines[-1].startswith("error: broker at")
        outage = lines[next(i for i, line in enumerate(lines) if "does not answer" in line) :]
        print(f"{name}: exited {took:.0f} s after the broker stopped, {len(outage)} log lines")
        assert len(outage) < 40, "\n".join(outage[:60])
        assert "Traceback" not in "\n".join(outage)


async def produce_geo(bootstrap: str, suffix: str, visits: range) -> None:
    """Two countries, then `visits` of them (geo_app's topics)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for c in range(2):
            value = json.dumps({"name": f"country {c}"}).encode()
            await producer.send(f"countries-{suffix}", value, key=f"C{c}".encode())
        await producer.flush()
        for v in visits:
            value = json.dumps({"id": v, "country": f"C{v % 2}"}).encode()
            await producer.send(f"visits-{suffix}", value, key=f"u{v}".encode())
        await producer.flush()
    finally:
        await producer.stop()


async def test_a_worker_with_a_global_table_stops_in_one_line_and_quietly_meanwhile(
    own_broker: EmbeddedBroker, unique: str, tmp_path: Path
) -> None:
    """The broker gone for good under a worker with a global table: the documented one line
    and exit 2, as without one, and no line per failed commit while it reconnects."""
    bootstrap = own_broker.bootstrap
    partitions = processes.PARTITIONS
    await ensure_topics(bootstrap, [TopicSpec(f"{t}-{unique}", partitions) for t in GEO_TOPICS])
    workers = processes.Workers(bootstrap, unique, tmp_path, app="geo_app:joins")
    # Long enough for a commit of the outage to fail (it looks for a coordinator for 10 s).
    workers.start("geo", "--broker-unavailable-timeout", "15")
    try:
        await produce_geo(bootstrap, unique, range(50))
        await processes.read_joined(
            bootstrap, unique, want=50, within_s=60, output="geo", field="visit"
        )
        own_broker.stop()
        code = exits(workers, "geo", 60)
    finally:
        workers.stop_all()
    log = (tmp_path / "geo.log").read_text(errors="replace")
    lines = log.splitlines()
    assert code == 2, log[-5000:]
    assert lines[-1].startswith("error: broker at") and "has not answered for" in lines[-1], lines
    assert "Traceback" not in log, log[-5000:]
    outage = lines[next(i for i, line in enumerate(lines) if "does not answer" in line) :]
    assert not [line for line in outage if "offsets not committed" in line], "\n".join(outage)


async def test_a_broker_stalled_past_the_session_timeout_loses_nothing(
    own_broker: EmbeddedBroker, unique: str, tmp_path: Path
) -> None:
    bootstrap = own_broker.bootstrap
    await processes.make_topics(bootstrap, unique)
    workers = processes.Workers(bootstrap, unique, tmp_path)
    workers.start("w1")
    workers.start("w2")
    pid = own_broker.pid
    assert pid is not None
    try:
        producing = asyncio.create_task(
            processes.produce(bootstrap, unique, range(3_000), pace_s=0.05)
        )
        await processes.read_joined(bootstrap, unique, want=100, within_s=60)
        os.kill(pid, signal.SIGSTOP)
        await asyncio.sleep(10)  # the session timeout is 6 s
        os.kill(pid, signal.SIGCONT)
        await producing
        seen = await processes.read_joined(bootstrap, unique, want=3_000, within_s=120)
    finally:
        os.kill(pid, signal.SIGCONT)
        codes = workers.stop_all()
    missing = sorted(set(range(3_000)) - seen.keys())
    duplicates = sum(n - 1 for n in seen.values())
    print(f"broker stalled 10 s: {len(missing)} missing, {duplicates} duplicates")
    assert not missing, f"missing {missing[:20]}\n{workers.logs()}"
    assert codes == {"w1": 0, "w2": 0}, workers.logs()


async def test_an_input_topic_deleted_while_running_stops_the_worker(
    own_broker: EmbeddedBroker, unique: str, tmp_path: Path
) -> None:
    bootstrap = own_broker.bootstrap
    await processes.make_topics(bootstrap, unique)
    workers = processes.Workers(bootstrap, unique, tmp_path)
    workers.start("w1")
    try:
        await processes.produce(bootstrap, unique, range(200), pace_s=0)
        await processes.read_joined(bootstrap, unique, want=200, within_s=60)
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.delete_topics([f"clicks-{unique}"])
        finally:
            await admin.close()
        code = exits(workers, "w1", 30)
    finally:
        workers.stop_all()
    last = (tmp_path / "w1.log").read_text(errors="replace").splitlines()[-1]
    assert code == 2, workers.logs()
    # The embedded broker may re-create the topic (with its default partition count) when a
    # client asks for it: either way the worker's tasks no longer fit its inputs.
    assert "no longer has the app's topics" in last or "restart the workers" in last, last


async def test_an_apache_kafka_restart_mid_stream_loses_nothing(
    unique: str, tmp_path: Path
) -> None:
    """`streamjoin broker --kafka --data DIR` stopped and started again on the same port and
    data under running workers: they ride it out (topics, records and committed offsets kept)."""
    first = KafkaBroker(data_dir=tmp_path / "kafka")
    bootstrap = first.start()
    restarted: KafkaBroker | None = None
    workers = processes.Workers(bootstrap, unique, tmp_path)
    try:
        await processes.make_topics(bootstrap, unique)
        # Default settings: after the reconnect a task waits for every input whose lag is not
        # known yet (KIP-695), so the side the producers resend later is not made late.
        workers.start("w1")
        workers.start("w2")
        producing = asyncio.create_task(
            processes.produce(bootstrap, unique, range(4_000), pace_s=0.15)
        )
        await processes.read_joined(bootstrap, unique, want=300, within_s=90)
        assert not producing.done(), "the restart must happen under load"
        first.stop()
        await asyncio.sleep(3)
        restarted = KafkaBroker(first.port, data_dir=tmp_path / "kafka")
        restarted.start()
        await producing
        seen = await processes.read_joined(bootstrap, unique, want=4_000, within_s=180)
        sent = await processes.read_sent(bootstrap, unique)
    finally:
        codes = workers.stop_all()
        for broker in (restarted, first):
            if broker is not None:
                broker.stop()
    assert sent == {"impressions": set(range(4_000)), "clicks": set(range(4_000))}, {
        topic: len(auctions) for topic, auctions in sent.items()
    }
    missing = sorted(set(range(4_000)) - seen.keys())
    duplicates = sum(n - 1 for n in seen.values())
    print(f"Kafka restarted: {len(missing)} missing, {duplicates} duplicates")
    assert not missing, f"missing {missing[:20]}\n{workers.logs()}"
    assert codes == {"w1": 0, "w2": 0}, workers.logs()


async def test_an_apache_kafka_back_empty_stops_the_workers_in_one_line(
    unique: str, tmp_path: Path
) -> None:
    """A broker restarted on the same port without its data, under load: the topics are gone,
    which no rejoin can fix. The worker says so in one line and exits 2 within seconds, though
    sends to the deleted topics were pending; it neither recreates the topics nor commits
    offsets into the empty broker."""
    first = KafkaBroker()
    bootstrap = first.start()
    empty: KafkaBroker | None = None
    workers = processes.Workers(bootstrap, unique, tmp_path)
    try:
        await processes.make_topics(bootstrap, unique)
        workers.start("w1")
        producing = asyncio.create_task(
            processes.produce(bootstrap, unique, range(100_000), pace_s=0.02)
        )
        await processes.read_joined(bootstrap, unique, want=200, within_s=60)
        first.stop()
        producing.cancel()
        empty = KafkaBroker(first.port)
        empty.start()
        code = exits(workers, "w1", 45)
        topics, committed = await topics_and_offsets(bootstrap, f"e2e-{unique}")
    finally:
        workers.stop_all()
        for broker in (empty, first):
            if broker is not None:
                broker.stop()
    log = (tmp_path / "w1.log").read_text(errors="replace")
    assert code == 2, workers.logs()
    assert "Traceback" not in log, log
    lines = log.splitlines()
    outage = lines[next(i for i, line in enumerate(lines) if "does not answer" in line) :]
    assert len(outage) < 40, "\n".join(outage[:60])
    last = lines[-1]
    assert last.startswith("error: the broker no longer has the app's topics"), last
    assert "came back without its data" in last and "restart the workers" in last, last
    assert not {t for t in topics if unique in t}, f"the worker made topics anew: {topics}"
    assert not committed, f"offsets committed into the empty broker: {committed}"
