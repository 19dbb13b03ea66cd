"""docs/spark.md's commands on the demo app, as a user types them, on the demo's broker (the
embedded Tansu): `streamjoin spark-stream` with its default options over half the traffic, a
worker joining all of it, `streamjoin backfill` and `streamjoin audit` of its output, and
`spark-stream` again over the same checkpoint: every pair the worker joined, as it wrote it.

Tansu answers ListOffsets too low after batched produces; Spark's connector plans from those
answers, so before spark-stream detected that broker its default source missed most pairs
(issue 37). The app module and its value types are shipped to Spark by value after their serdes
were built (msgspec then caches its C type info on the dataclasses): a path that broke once.
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

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds

ADS = Path(__file__).resolve().parents[2] / "apps" / "ads"
if str(ADS) not in sys.path:
    sys.path.insert(0, str(ADS))

from data import Click, Impression, generate_traffic  # noqa: E402
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
    if all(bound.end == bound.start for bound in bounds):
        return 0
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


async def _produce(bootstrap: str, records: list[Impression | Click], close_at: int | None) -> None:
    """The records in batches, then (with `close_at`) a closing pair per partition at that
    time."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
    await producer.start()
    try:
        for record in records:
            topic = CLICKS if isinstance(record, Click) else IMPRESSIONS
            key = record.auction_id.encode()
            await producer.send(topic, record.encode(), key=key, timestamp_ms=record.timestamp_ms)
        for partition in range(PARTITIONS if close_at is not None else 0):
            # An impression and its click: the stores of both sides reach close_at, so every
            # window closes (each side's non-matches wait for their own side's time).
            auction = f"closer-{close_at}-{partition}"
            for closer in (
                Impression(auction, "closer", "nobody", close_at),
                Click(auction, close_at),
            ):
                topic = CLICKS if isinstance(closer, Click) else IMPRESSIONS
                await producer.send(
                    topic,
                    closer.encode(),
                    key=auction.encode(),
                    partition=partition,
                    timestamp_ms=close_at,
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


def _spark_stream(bootstrap: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """docs/spark.md's "Live joins on Spark" run, with the default source, to Parquet."""
    return _streamjoin(
        "spark-stream",
        "app:joins",
        "--join",
        "attribute",
        "--bootstrap",
        bootstrap,
        "--checkpoint",
        str(tmp / "ck"),
        "--output",
        str(tmp / "live"),
        "--available-now",
    )


async def test_spark_commands_on_the_demo_app_and_broker_equal_the_worker(
    tansu_broker: Broker, tmp_path: Path
) -> None:
    bootstrap = tansu_broker.bootstrap
    await ensure_topics(
        bootstrap, [TopicSpec(t, PARTITIONS) for t in (IMPRESSIONS, CLICKS, OUTPUT)]
    )
    latest = await _latest_timestamp(bootstrap)
    start = latest + CLOSE_MS if latest else FIRST_START
    traffic = generate_traffic(400, spacing_ms=100, start_ms=start, seed=26)
    records = list(traffic.in_time_order())
    end = max(r.timestamp_ms for r in records) + 1
    half = len(records) // 2
    await _produce(bootstrap, records[:half], None)
    first = _spark_stream(bootstrap, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "reading with streamjoin's Python source, not Spark's Kafka connector" in first.stdout
    assert "batch 0: " in first.stdout, first.stdout
    await _produce(bootstrap, records[half:], end + CLOSE_MS)

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

    # The second run continues from the first's checkpoint. Matches come out as the worker
    # wrote them; an impression without a click waits until the impressions' own watermark
    # passes its window (only clicks close it here).
    second = _spark_stream(bootstrap, tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    rows = [json.loads(row["value"]) for row in pq.read_table(tmp_path / "live").to_pylist()]
    streamed = {value["auction_id"]: value for value in rows if value["auction_id"] in auctions}
    assert len([value for value in rows if value["auction_id"] in auctions]) == len(streamed)
    clicked = {a: value for a, value in joined.items() if value["clicked"]}
    assert {a: v for a, v in streamed.items() if v["clicked"]} == clicked
    assert all(joined[a] == value for a, value in streamed.items())
