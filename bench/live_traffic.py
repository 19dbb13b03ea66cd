"""Live ad traffic at a steady rate, for the latency benchmarks: impressions stamped with the
wall clock as they are sent, and for 30% of them a click 0-2 s later (stamped when sent), to
`<prefix>-impressions` and `<prefix>-clicks`; --rate counts both. A process of its own, so that
producing never delays the benchmark's reader (or the reverse). Prints one JSON line at the end:
{"sent": records, "seconds": ...}.

    python bench/live_traffic.py PREFIX --bootstrap HOST:PORT --rate 6000 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import random
import time

from ads_join import Click, Impression, topic_names
from aiokafka import AIOKafkaProducer

CLICK_SHARE = 0.3
TICK_S = 0.01


async def send(prefix: str, bootstrap: str, rate: float, seconds: float) -> int:
    imp, clk, _ = topic_names(prefix)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, max_batch_size=256 * 1024)
    await producer.start()
    rng = random.Random(11)
    due: list[tuple[float, str]] = []
    sent = 0
    impressions = 0.0
    started = time.monotonic()
    try:
        while (elapsed := time.monotonic() - started) < seconds:
            now_ms = int(time.time() * 1000)
            wanted = elapsed * rate / (1 + CLICK_SHARE) - impressions
            for _ in range(int(wanted)):
                auction = f"live-{prefix}-{int(impressions):09d}"
                impressions += 1
                value = Impression(auction, "live", "u1", now_ms).encode()
                await producer.send(imp, value, key=auction.encode(), timestamp_ms=now_ms)
                sent += 1
                if rng.random() < CLICK_SHARE:
                    heapq.heappush(due, (time.monotonic() + rng.random() * 2, auction))
            while due and due[0][0] <= time.monotonic():
                _, auction = heapq.heappop(due)
                ts = int(time.time() * 1000)
                await producer.send(
                    clk, Click(auction, ts).encode(), key=auction.encode(), timestamp_ms=ts
                )
                sent += 1
            await asyncio.sleep(TICK_S)
        await producer.flush()
    finally:
        await producer.stop()
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--rate", type=float, required=True, help="records per second")
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args()
    started = time.monotonic()
    sent = asyncio.run(send(args.prefix, args.bootstrap, args.rate, args.seconds))
    print(json.dumps({"sent": sent, "seconds": time.monotonic() - started}), flush=True)


if __name__ == "__main__":
    main()
