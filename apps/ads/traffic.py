"""Send the demo's traffic: impressions and clicks, at a steady rate (the demo), or live.

`demo.py --traffic-only` (docker/docker-compose.yml's one-shot `traffic` service) sends live
traffic: stamped from the current time and each record sent when the clock reaches its
timestamp, so event time never runs ahead of the clock (Kafka's retention keeps the records,
and traffic sent later, even at once, is never behind a join's stream time: not late). It sends
one seed's traffic once: run again, it finds that seed's first impression already in the topic
and sends nothing, so `docker compose up` a second time adds no duplicates; another `--seed`
sends more (new auctions)."""

from __future__ import annotations

import asyncio
import time

from aiokafka import TopicPartition
from data import AdTraffic, Click, generate_traffic
from rich.console import Console

from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.security_config import connection_from_environment
from streamjoin.kafka.watermarks import log_bounds, topic_partitions

IMPRESSIONS, CLICKS = "ads-impressions", "ads-clicks"
CLICK_WITHIN_S = 10.0
"""Live traffic: how long after its impression a click comes, at most (the join's window is a
minute; a shorter wait makes a run shorter)."""
# Lines as they are: a log or CI output is not wrapped at 80 columns (a terminal wraps itself).
console = Console(highlight=False, soft_wrap=True)


async def produce_paced(
    bootstrap: str, traffic: AdTraffic, rate: float | None, start: float
) -> tuple[int, float]:
    """Send the traffic in time order, at about `rate` records per second, or (None) each record
    when the clock reaches its timestamp; say when it is done. Returns how many records, and
    when the last was acknowledged (monotonic)."""
    producer = connection_from_environment(bootstrap).producer(linger_ms=5)
    await producer.start()
    sent, started = 0, time.monotonic()
    try:
        for record in traffic.in_time_order():
            if rate is None:
                ahead = record.timestamp_ms / 1000 - time.time()
            else:
                ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0.02:
                await asyncio.sleep(ahead)
            topic = CLICKS if isinstance(record, Click) else IMPRESSIONS
            await producer.send(
                topic,
                record.encode(),
                key=record.auction_id.encode(),
                timestamp_ms=record.timestamp_ms,
            )
            sent += 1
        await producer.flush()
        produced_at = time.monotonic()
        console.print(f"{produced_at - start:5.1f} s  all {sent} records produced")
    finally:
        await producer.stop()
    return sent, produced_at


def live_traffic(
    impressions: int, seed: int, *, click_within_s: float = CLICK_WITHIN_S, start_ms: int = 0
) -> AdTraffic:
    """The traffic `--traffic-only` sends: impressions a millisecond apart (40 s for the
    default 40,000), each clicked ones' click within `click_within_s`."""
    return generate_traffic(
        impressions,
        spacing_ms=1,
        max_click_delay_ms=int(click_within_s * 1000),
        start_ms=start_ms,
        seed=seed,
    )


async def sent_before(bootstrap: str, traffic: AdTraffic) -> bool:
    """Whether the impressions topic holds this traffic's first impression: its partition is
    read (the one the producer's key hash chose) until the end."""
    key = traffic.impressions[0].auction_id.encode()
    connection = connection_from_environment(bootstrap)
    count = len(await topic_partitions(connection, [IMPRESSIONS]))
    partition = TopicPartition(IMPRESSIONS, partition_for_key(key, count))
    [bounds] = await log_bounds(connection, [partition])
    if bounds.end == bounds.start:
        return False
    consumer = connection.consumer(enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([partition])
        consumer.seek(partition, bounds.start)
        while await consumer.position(partition) < bounds.end:
            for records in (await consumer.getmany(partition, timeout_ms=500)).values():
                if any(record.key == key for record in records):
                    return True
    finally:
        await consumer.stop()
    return False


async def send_once(bootstrap: str, impressions: int, seed: int, click_within_s: float) -> None:
    """Send seed `seed`'s live traffic, stamped from now, unless it was sent before."""
    traffic = live_traffic(
        impressions, seed, click_within_s=click_within_s, start_ms=int(time.time() * 1000)
    )
    again = f"to send more, run it again with another seed (--seed {seed + 1})"
    if await sent_before(bootstrap, traffic):
        console.print(
            f"the traffic of seed {seed} is in {IMPRESSIONS} already: nothing sent; {again}"
        )
        return
    console.print(
        f"sending {len(traffic.impressions)} impressions, {len(traffic.clicks)} clicks "
        f"(seed {seed}) live, stamped from now"
    )
    await produce_paced(bootstrap, traffic, None, time.monotonic())
    console.print(f"sent the traffic of seed {seed}; {again}")
