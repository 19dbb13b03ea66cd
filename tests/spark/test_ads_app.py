"""docs/spark.md's commands on the demo app, as a user types them: a worker joins the demo's
traffic, then `streamjoin backfill`, `streamjoin audit` and `streamjoin spark-stream` run in
apps/ads on the same topics.

The app module and its value types are shipped to Spark by value after their serdes were built
(msgspec then caches its C type info on the dataclasses): this is the path that broke.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamjoin.broker import Broker, EmbeddedBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds

ADS = Path(__file__).resolve().parents[2] / "apps" / "ads"
if str(ADS) not in sys.path:
    sys.path.insert(0, str(ADS))

from data import AdTraffic, Click, generate_traffic  # noqa: E402
from workers import WorkerProcess  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(900)]

IMPRESSIONS, CLICKS, OUTPUT = "ads-impressions", "ads-clicks", "ads-attributed"
PARTITIONS = 8
"""As the demo creates them (the session's demo test may have)."""
CLOSE_MS = 120_000
"""Past the join's window (60 s) and grace (5 s): a record this much later closes every window."""
FIRST_START = 1_600_000_000_000
"""Before the demo's traffic (apps/ads/data.py starts at 1,700,000,000,000): when this test runs
first, the session's demo test still finds its windows open; when the demo ran first, this
traffic comes after its (see `_latest_timestamp`)."""
STREAMJOIN = str(Path(sys.executable).with_name("streamjoin"))


async def _latest_timestamp(bootstrap: str) -> int:
    """The newest timestamp in the demo's input topics (0 when empty): this run's traffic comes
    after whatever an earlier run left there, so the worker does not drop it as late. The ends
    are fetched high watermarks: ListOffsets answers too low on the embedded broker after
    batched produces, and traffic timed after a record short of the end lost pairs there."""
    tps = [TopicPartition(t, p) for t in (IMPRESSIONS, CLICKS) for p in range(PARTITIONS)]
    bounds = await log_bounds(bootstrap, tps)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(tps)
        latest = 0
        for tp, bound in zip(tps, bounds, strict=True):
            if bound.end > bound.start:
                consumer.seek(tp, bound.end - 1)
                for records in (await consumer.getmany(tp, timeout_ms=5_000)).values():
                    latest = max([latest, *(r.timestamp for r in records)])
        return latest
    finally:
        await consumer.stop()


async def _produce(bootstrap: str, traffic: AdTraffic, close_at: int) -> None:
    """The traffic, then one click per partition at `close_at` that closes every window."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for record in traffic.in_time_order():
            topic = CLICKS if isinstance(record, Click) else IMPRESSIONS
            key = record.auction_id.encode()
            await producer.send(topic, record.encode(), key=key, timestamp_ms=record.timestamp_ms)
        for partition in range(PARTITIONS):
            closer = Click(f"closer-{close_at}-{partition}", close_at)
            key = closer.auction_id.encode()  # a record without a key joins nothing
            await producer.send(
                CLICKS, closer.encode(), key=key, partition=partition, timestamp_ms=close_at
            )
        await producer.flush()
    finally:
        await producer.stop()


async def _joined(
    bootstrap: str, auctions: set[str], seconds: float
) -> dict[str, dict[str, object]]:
    """The worker's output for `auctions`, once it has one record for each (or after
    `seconds`)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: dict[str, dict[str, object]] = {}
    deadline = time.monotonic() + seconds
    try:
        tps = [TopicPartition(OUTPUT, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while len(found) < len(auctions) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    value = json.loads(record.value)
                    if value["auction_id"] in auctions:
                        found[value["auction_id"]] = value
    finally:
        await consumer.stop()
    return found


def _streamjoin(*arguments: str) -> subprocess.CompletedProcess[str]:
    """A command as typed in apps/ads."""
    return subprocess.run(
        [STREAMJOIN, *arguments], cwd=ADS, capture_output=True, text=True, timeout=420
    )


async def test_backfill_and_audit_of_the_demo_app_after_a_worker_joined_it(
    broker: Broker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    await ensure_topics(
        bootstrap, [TopicSpec(t, PARTITIONS) for t in (IMPRESSIONS, CLICKS, OUTPUT)]
    )
    latest = await _latest_timestamp(bootstrap)
    start = latest + CLOSE_MS if latest else FIRST_START
    traffic = generate_traffic(40, spacing_ms=100, start_ms=start, seed=26)
    end = max(r.timestamp_ms for r in traffic.in_time_order()) + 1
    await _produce(bootstrap, traffic, end + CLOSE_MS)

    worker = WorkerProcess("spark-e2e", bootstrap, tmp_path)
    worker.start()
    try:
        auctions = {i.auction_id for i in traffic.impressions}
        joined = await _joined(bootstrap, auctions, seconds=120)
        assert len(joined) == len(auctions), worker.log_tail()
        assert sum(bool(v["clicked"]) for v in joined.values()) == len(traffic.clicks)
        await asyncio.sleep(3)  # its commit (every second) covers what it wrote
    finally:
        assert worker.stop() == 0, worker.log_tail()

    window = ["--from", str(start), "--to", str(end), "--bootstrap", bootstrap]
    output = tmp_path / "attributed"
    backfill = _streamjoin(
        "backfill", "app:joins", "--join", "attribute", *window, "--output", str(output)
    )
    assert backfill.returncode == 0, backfill.stdout + backfill.stderr
    assert "Traceback" not in backfill.stderr
    values = [json.loads(row["value"]) for row in pq.read_table(output).to_pylist()]
    assert len(values) == len(auctions)
    assert {value["auction_id"]: value for value in values} == joined

    audit = _streamjoin("audit", "app:joins", "--join", "attribute", *window)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    count = len(auctions)
    assert f"{count} expected, {count} written, {count} matched" in audit.stdout, audit.stdout
    assert audit.stdout.strip().endswith("OK"), audit.stdout

    # docs/spark.md's "Live joins on Spark": the same join as a streaming query, through Spark's
    # Kafka connector (on the embedded broker through the Python source, as the page says).
    # Matches come out as the worker wrote them; an impression without a click waits until the
    # impressions' own watermark passes its window (only clicks close it here).
    source = ["--kafka-source", "python"] if isinstance(broker, EmbeddedBroker) else []
    live = tmp_path / "live"
    stream = _streamjoin(
        "spark-stream",
        "app:joins",
        "--join",
        "attribute",
        "--bootstrap",
        bootstrap,
        "--checkpoint",
        str(tmp_path / "ck"),
        "--output",
        str(live),
        "--available-now",
        *source,
    )
    assert stream.returncode == 0, stream.stdout + stream.stderr
    assert "batch 0: " in stream.stdout, stream.stdout
    rows = [json.loads(row["value"]) for row in pq.read_table(live).to_pylist()]
    streamed = {value["auction_id"]: value for value in rows if value["auction_id"] in auctions}
    assert len([value for value in rows if value["auction_id"] in auctions]) == len(streamed)
    clicked = {a: value for a, value in joined.items() if value["clicked"]}
    assert {a: v for a, v in streamed.items() if v["clicked"]} == clicked
    assert all(joined[a] == value for a, value in streamed.items())
