"""Re-keyed and chained joins through real workers on the embedded broker: clicks and
conversions keyed by their own ids are re-keyed by auction through repartition topics, the
first join's output feeds the second, and every expected result arrives - also when a worker
is killed -9 between writing to a repartition topic and committing its input (duplicates
allowed, nothing missing)."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import worker_processes as processes
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts

pytestmark = [pytest.mark.broker, pytest.mark.slow]

APP = "rekey_app:joins"
LAYOUT = {"impressions": 4, "clicks": 3, "conversions": 2}
"""Three partition counts: only the repartition topics make the joins' inputs co-partitioned."""


async def produce(bootstrap: str, suffix: str, auctions: range, pace_s: float) -> None:
    """Per auction: an impression (keyed by auction), a click 1-30 s later (keyed by click id)
    and a bot's click (filtered out), and a conversion 1-20 s after the click (keyed by its
    own id); all in event-time order."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        base = processes.EVENT_T0
        events: list[tuple[int, str, str, dict[str, object]]] = []
        for a in auctions:
            ts = base + a * 100
            click_ts = ts + 1_000 + (a * 7919) % 29_000
            events.append((ts, "impressions", f"a{a}", {"auction": a}))
            events.append(
                (click_ts, "clicks", f"c{a}", {"click": f"c{a}", "auction": a, "bot": False})
            )
            events.append(
                (click_ts, "clicks", f"b{a}", {"click": f"b{a}", "auction": a, "bot": True})
            )
            conversion = {"conversion": f"v{a}", "auction": a, "amount": a % 97}
            events.append((click_ts + 1_000 + a % 19_000, "conversions", f"v{a}", conversion))
        for i, (ts, topic, key, value) in enumerate(sorted(events, key=lambda e: e[0])):
            await producer.send(
                f"{topic}-{suffix}", json.dumps(value).encode(), key=key.encode(), timestamp_ms=ts
            )
            if pace_s and i % 100 == 99:
                await asyncio.sleep(pace_s)
        await producer.flush()
    finally:
        await producer.stop()


async def read_revenue(
    bootstrap: str,
    suffix: str,
    want: int,
    within_s: float,
    isolation_level: str = "read_uncommitted",
    settle_s: float = 0.0,
) -> Counter[int]:
    """Auction -> how many revenue records name it (with its click and amount checked), read
    until `want` auctions are seen, then until nothing arrives for `settle_s`."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation_level
    )
    await consumer.start()
    seen: Counter[int] = Counter()

    def count(records: list[Any]) -> None:
        for record in records:
            value = json.loads(record.value)
            a = value["auction"]
            assert value == {"auction": a, "click": f"c{a}", "amount": a % 97}
            assert record.key == f"a{a}".encode()
            seen[a] += 1

    try:
        tps = [TopicPartition(f"revenue-{suffix}", p) for p in range(LAYOUT["impressions"])]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + within_s
        while len(seen) < want and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                count(records)
        while settle_s and (batch := await consumer.getmany(timeout_ms=int(settle_s * 1000))):
            for records in batch.values():
                count(records)
    finally:
        await consumer.stop()
    return seen


async def _topics(bootstrap: str, suffix: str) -> None:
    await ensure_topics(bootstrap, [TopicSpec(f"{t}-{suffix}", n) for t, n in LAYOUT.items()])


async def test_rekeyed_and_chained_joins_through_two_workers(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await _topics(broker.bootstrap, unique)
    workers = processes.Workers(broker.bootstrap, unique, tmp_path, app=APP)
    workers.start("w1")
    workers.start("w2")
    try:
        await produce(broker.bootstrap, unique, range(1_500), pace_s=0)
        seen = await read_revenue(broker.bootstrap, unique, 1_500, within_s=90)
    finally:
        codes = workers.stop_all()
    missing = sorted(set(range(1_500)) - seen.keys())
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"
    assert codes == {"w1": 0, "w2": 0}, workers.logs()
    async with open_admin(broker.bootstrap) as admin:
        counts = await partition_counts(admin)
    app = f"rekey-{unique}"
    assert counts[f"{app}-attribute-right-repartition"] == 4
    assert counts[f"{app}-revenue-right-repartition"] == 4
    assert counts[f"attributed-{unique}"] == 4


async def _count_records(bootstrap: str, topic: str, want: int, within_s: float) -> int:
    """Records ever written to `topic` (4 partitions): the high watermarks seen in fetches,
    until they add up to `want` or `within_s` pass. Not the records still there: a broker with
    DeleteRecords purges consumed repartition records; not ListOffsets: the embedded broker's
    end offsets lag."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    count = 0
    try:
        tps = [TopicPartition(topic, p) for p in range(4)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + within_s
        while count < want and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=500)
            count = sum(consumer.highwater(tp) or 0 for tp in tps)
    finally:
        await consumer.stop()
    return count


async def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        offsets = [await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)]
        return sum(o or 0 for o in offsets)
    finally:
        await consumer.stop()


async def test_kill_9_between_repartition_write_and_commit_loses_nothing(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    """The first worker commits never (an hour's interval): it has re-keyed every click into the
    repartition topic, and committed none of them, when it is killed -9. The next worker
    re-keys them all again: duplicates in the repartition topic, nothing missing downstream."""
    auctions = 1_500
    await _topics(broker.bootstrap, unique)
    repartition = f"rekey-{unique}-attribute-right-repartition"
    workers = processes.Workers(broker.bootstrap, unique, tmp_path, app=APP)
    workers.start("w1", "--commit-interval", "3600")
    try:
        await produce(broker.bootstrap, unique, range(auctions), pace_s=0)
        written = await _count_records(broker.bootstrap, repartition, auctions, within_s=90)
        assert written >= auctions, workers.logs()
        workers.processes["w1"].send_signal(signal.SIGKILL)
        workers.processes["w1"].wait(10)
        committed = await _committed(broker.bootstrap, f"rekey-{unique}", f"clicks-{unique}", 3)
        assert committed == 0, "the kill must land before the first commit"
        workers.start("w2")
        seen = await read_revenue(broker.bootstrap, unique, auctions, within_s=120)
        rewritten = await _count_records(broker.bootstrap, repartition, 2 * auctions, 30)
    finally:
        workers.stop_all()
    missing = sorted(set(range(auctions)) - seen.keys())
    duplicates = sum(n - 1 for n in seen.values())
    print(
        f"kill -9 before commit: {auctions} expected, {len(missing)} missing, {duplicates} "
        f"duplicate results; repartition topic holds {rewritten} records for {auctions} clicks"
    )
    assert not missing, f"missing {missing[:20]}...\n{workers.logs()}"
    assert rewritten >= 2 * auctions  # every click re-keyed twice: once per worker
