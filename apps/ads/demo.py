"""The streamjoin demo: ad impressions and clicks through a Kafka broker, checked end to end.

Starts the embedded broker (unless --bootstrap is given), creates the demo topics, produces the
traffic of the data generator keyed by auction id, reads both topics back and checks that every
record arrived and that each click sits in the same partition number as its impression — the
co-partitioning every stream-stream join relies on.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import AdTraffic, Click, generate_traffic

from streamjoin.broker import EmbeddedBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

IMPRESSIONS, CLICKS, PARTITIONS = "ads-impressions", "ads-clicks", 8
console = Console(highlight=False)


async def produce(bootstrap: str, traffic: AdTraffic) -> float:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    started = time.perf_counter()
    try:
        for record in traffic.in_time_order():
            topic = CLICKS if isinstance(record, Click) else IMPRESSIONS
            await producer.send(
                topic,
                record.encode(),
                key=record.auction_id.encode(),
                timestamp_ms=record.timestamp_ms,
            )
        await producer.flush()
    finally:
        await producer.stop()
    return time.perf_counter() - started


async def read_back(bootstrap: str) -> dict[str, dict[bytes, int]]:
    """Partition of every key in each topic, reading each partition up to its high watermark."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    placed: dict[str, dict[bytes, int]] = {IMPRESSIONS: {}, CLICKS: {}}
    try:
        pending = {TopicPartition(t, p) for t in placed for p in range(PARTITIONS)}
        consumer.assign(list(pending))
        await consumer.seek_to_beginning(*pending)
        while pending:
            for tp, records in (await consumer.getmany(*pending, timeout_ms=1000)).items():
                for record in records:
                    placed[tp.topic][record.key] = tp.partition
            for tp in list(pending):
                highwater = consumer.highwater(tp)
                if highwater is not None and await consumer.position(tp) >= highwater:
                    pending.discard(tp)
    finally:
        await consumer.stop()
    return placed


def report(traffic: AdTraffic, placed: dict[str, dict[bytes, int]], produce_s: float) -> bool:
    impressions, clicks = placed[IMPRESSIONS], placed[CLICKS]
    table = Table(title=f"records per partition ({PARTITIONS} partitions, keyed by auction id)")
    table.add_column("partition", justify="right")
    table.add_column(IMPRESSIONS, justify="right")
    table.add_column(CLICKS, justify="right")
    per_impression, per_click = Counter(impressions.values()), Counter(clicks.values())
    for p in range(PARTITIONS):
        table.add_row(str(p), str(per_impression[p]), str(per_click[p]))
    console.print(table)
    produced = len(traffic.impressions) + len(traffic.clicks)
    console.print(
        f"produced {produced} records in {produce_s:.2f} s ({produced / produce_s:,.0f} records/s)"
    )
    apart = sum(1 for key, p in clicks.items() if impressions.get(key) != p)
    ok = (
        len(impressions) == len(traffic.impressions)
        and len(clicks) == len(traffic.clicks)
        and not apart
    )
    console.print(f"clicks in another partition than their impression: {apart}")
    console.print(
        f"consumed: impressions={len(impressions)}/{len(traffic.impressions)} "
        f"clicks={len(clicks)}/{len(traffic.clicks)} {'OK' if ok else 'MISSING RECORDS'}"
    )
    return ok


async def run(bootstrap: str, impressions: int) -> bool:
    await ensure_topics(
        bootstrap, [TopicSpec(IMPRESSIONS, PARTITIONS), TopicSpec(CLICKS, PARTITIONS)]
    )
    traffic = generate_traffic(impressions)
    console.print(
        f"generated {len(traffic.impressions)} impressions and {len(traffic.clicks)} clicks"
    )
    produce_s = await produce(bootstrap, traffic)
    return report(traffic, await read_back(bootstrap), produce_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this Kafka broker instead of starting one")
    parser.add_argument("--impressions", type=int, default=20_000)
    args = parser.parse_args()
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap
            console.print(f"embedded broker on {bootstrap} (data in memory only)")
        ok = asyncio.run(run(bootstrap, args.impressions))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
