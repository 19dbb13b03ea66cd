"""Late stream-stream records on a running worker (issue 34), as Kafka Streams 4.4 treats them: a
record behind its window plus grace is not dropped but joins the partners the other side's store
still holds; a late left-join record without a partner comes out as a non-match once none can
come; both are counted in metrics and in the stop summary ("N late records (J joined, P with no
partner)")."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from harness import Running, workers

from streamjoin import App, JoinWindows
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.joins.windowed import WindowedJoin

pytestmark = [pytest.mark.broker, pytest.mark.slow]

T0 = int(time.time() * 1000) - 600_000


def make_app(suffix: str) -> App:
    app = App(f"late-{suffix}", max_task_idle_ms=0)
    topic = {n: app.topic(f"{n}-{suffix}", value_type=str, partitions=1) for n in "lrLR"}

    def joiner(left: str | None, right: str | None) -> str:
        return f"{left or '_'}+{right or '_'}"

    out = app.topic(f"out-{suffix}", value_type=str, partitions=1)
    inner = JoinWindows(before=13, after=1, grace=10)
    app.join(topic["l"], topic["r"], window=inner, into=out, name="inner")(joiner)
    left = JoinWindows(before=3, after=2, grace=10)
    app.join(topic["L"], topic["R"], window=left, how="left", into=out, name="left")(joiner)
    return app


async def send(bootstrap: str, records: list[tuple[str, str, str, int]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for topic, key, value, t in records:
            await producer.send_and_wait(
                topic, value.encode(), key=key.encode(), timestamp_ms=T0 + t
            )
    finally:
        await producer.stop()


async def read(bootstrap: str, topic: str, count: int) -> list[tuple[str, str, int]]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    found: list[tuple[str, str, int]] = []
    try:
        deadline = time.monotonic() + 60
        while len(found) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += [(r.key.decode(), r.value.decode(), r.timestamp - T0) for r in records]
    finally:
        await consumer.stop()
    return found


async def processed_through(worker: Running, join: str, stream_time: int) -> None:
    """Until the join's task has processed a record at `stream_time` (T0-relative)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        manager = worker.worker.manager
        for active in manager.active.values() if manager else ():
            for member in active.running.members if active.running else ():
                processor = getattr(member, "processor", None)
                if (
                    isinstance(processor, WindowedJoin)
                    and member.spec.name == join  # type: ignore[union-attr]
                    and processor.stream_time >= T0 + stream_time
                ):
                    return
        await asyncio.sleep(0.1)
    raise AssertionError(f"join {join} never reached stream time {stream_time}")


async def test_late_records_join_what_the_other_side_holds_and_are_counted(
    broker: Broker, unique: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(unique)
    topics = [f"{n}-{unique}" for n in ("l", "r", "L", "R", "out")]
    await ensure_topics(broker.bootstrap, [TopicSpec(t, 1) for t in topics])
    await send(broker.bootstrap, [(topics[0], "a", "L2", 45), (topics[0], "a", "L5", 64)])
    await send(broker.bootstrap, [(topics[3], "b", "R1", 37)])
    running = Running(app, broker.bootstrap, tmp_path)
    caplog.set_level(logging.INFO, logger="streamjoin")
    async with workers(running):
        await running.start()
        await processed_through(running, "inner", 64)
        await processed_through(running, "left", 37)
        # R2@35 is late (35 + 13 + 10 < 64) yet L2@45 is still in the left store; L1@16 is
        # late and finds nothing: a right record at 13..18 could still find it until the left
        # side's stream time reaches 31, which L3@40 brings.
        await send(broker.bootstrap, [(topics[1], "a", "R2", 35), (topics[2], "b", "L1", 16)])
        await send(broker.bootstrap, [(topics[2], "x", "L3", 40)])
        out = await read(broker.bootstrap, topics[4], 2)
        counters = {join: c for join, (c, _) in running.worker.manager.counters().items()}
        await running.stop()
    assert sorted(out) == [("a", "L2+R2", 45), ("b", "L1+_", 16)]
    assert (counters["inner"].late_joined, counters["inner"].late_no_partner) == (1, 0)
    assert (counters["left"].late_joined, counters["left"].late_no_partner) == (0, 1)
    summary = "\n".join(r.getMessage() for r in caplog.records)
    assert "join inner: 1 matched, 0 unmatched, 1 late records (1 joined, 0 with no partner)" in (
        summary
    )
    assert "join left: 0 matched, 1 unmatched, 1 late records (0 joined, 1 with no partner)" in (
        summary
    )
