"""What exactly-once costs on the ad join: at-least-once against exactly-once on Apache Kafka,
same data, same broker, one run.

Throughput: the demo's traffic (apps/ads/data.py; N impressions 10 ms apart, 30% clicked) is
produced before anything is timed to one topic set per worker run; a worker
(`bench/worker_runner.py`, apps/ads/app.py's left join) processes it with the default commit
interval (5 s), from its first fetch until every input record is processed and its output
acknowledged. The two guarantees take turns, `--rounds` times; the median records/s of each and
their ratio (goal: exactly-once >= 80% of at-least-once) are printed.

Latency: live traffic (impressions stamped with the wall clock as they are sent, a click 0-2 s
later for 30% of them) goes to a running worker of each guarantee for `--live-s` seconds; a
`read_committed` reader of the output takes, for every clicked result, the time it could read
it minus the click's timestamp. Exactly-once outputs become visible when their transaction
commits, so the latency added is about half a commit interval on average, one at most.

    python bench/eos_throughput.py [--impressions 50000] [--partitions 4] [--rounds 2]
                                   [--live-s 20] [--live-rate 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from ads_join import Click, Impression, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from contenders import SETTLE_S, Outcome, timed_process, topic_sets, worker_command
from runner_process import terminate

from streamjoin.broker import KafkaBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

GUARANTEES = ("at_least_once", "exactly_once")


def runner(prefix: str, bootstrap: str, state: Path, guarantee: str, *extra: str) -> list[str]:
    guaranteed = ["--processing-guarantee", guarantee, *extra]
    return worker_command(prefix, bootstrap, state, None, None, extra=guaranteed)


async def throughput(bootstrap: str, args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    prefixes, records = await topic_sets(
        bootstrap,
        "eos",
        GUARANTEES,
        rounds=args.rounds,
        partitions=args.partitions,
        impressions=args.impressions,
    )
    print(f"produced {records:,} records to each of {len(prefixes)} topic sets")
    rates: dict[str, list[float]] = {g: [] for g in GUARANTEES}
    for n in range(args.rounds):
        order = GUARANTEES if n % 2 == 0 else GUARANTEES[::-1]
        for guarantee in order:
            await asyncio.sleep(SETTLE_S)
            prefix = prefixes[guarantee, n]
            command = runner(
                prefix,
                bootstrap,
                workdir / prefix,
                guarantee,
                "--until-records",
                str(records),
            )
            outcome: Outcome = await timed_process(
                guarantee, command, {}, workdir / f"{prefix}.log", exits=True
            )
            rates[guarantee].append(outcome.rate)
            print(f"round {n + 1}: {guarantee:<14} {outcome.rate:10,.0f} records/s")
    return {g: statistics.median(r) for g, r in rates.items()}


async def live_latency(
    bootstrap: str, args: argparse.Namespace, workdir: Path, guarantee: str
) -> list[float]:
    """Seconds from each clicked result's click timestamp until a read_committed reader got it."""
    prefix = f"eos-live-{uuid.uuid4().hex[:6]}-{guarantee[:4]}"
    imp, clk, out = topic_names(prefix)
    await ensure_topics(bootstrap, [TopicSpec(t, args.partitions) for t in (imp, clk, out)])
    command = runner(prefix, bootstrap, workdir / prefix, guarantee)
    with (workdir / f"{prefix}.log").open("wb") as log:
        worker = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
            preexec_fn=die_with_parent,
        )
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await consumer.start()
    await producer.start()
    latencies: list[float] = []
    try:
        tps = [TopicPartition(out, p) for p in range(args.partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)

        async def read() -> None:
            while True:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    now = time.time()
                    for r in records:
                        if json.loads(r.value).get("clicked"):
                            latencies.append(now - r.timestamp / 1000)

        reading = asyncio.create_task(read())
        await asyncio.sleep(15)  # the worker joins its group and opens its tasks
        rng = random.Random(7)
        clicks: list[tuple[float, str]] = []
        end = time.monotonic() + args.live_s
        n = 0
        while time.monotonic() < end:
            now_ms = int(time.time() * 1000)
            for _ in range(max(1, args.live_rate // 20)):
                auction = f"live-{n:08d}"
                n += 1
                value = Impression(auction, "c1", "u1", now_ms).encode()
                await producer.send(imp, value, key=auction.encode(), timestamp_ms=now_ms)
                if rng.random() < 0.3:
                    clicks.append((time.time() + rng.random() * 2, auction))
            due = [c for c in clicks if c[0] <= time.time()]
            clicks = [c for c in clicks if c[0] > time.time()]
            for _, auction in due:
                ts = int(time.time() * 1000)
                value = Click(auction, ts).encode()
                await producer.send(clk, value, key=auction.encode(), timestamp_ms=ts)
            await asyncio.sleep(0.05)
        await producer.flush()
        await asyncio.sleep(2 * 5 + 2)  # the last commit interval's results
        reading.cancel()
    finally:
        await producer.stop()
        await consumer.stop()
        await terminate(worker)
    return latencies


def describe(latencies: list[float]) -> str:
    if not latencies:
        return "no results read"
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return (
        f"{len(ordered):6,} results  median {statistics.median(ordered) * 1000:7.0f} ms  "
        f"p99 {p99 * 1000:7.0f} ms"
    )


async def main(args: argparse.Namespace) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-eos-bench-") as tmp,
        KafkaBroker(partitions=args.partitions) as broker,
    ):
        workdir = Path(tmp)
        print(f"{broker.name} on {broker.bootstrap}")
        medians = await throughput(broker.bootstrap, args, workdir)
        latency = {g: await live_latency(broker.bootstrap, args, workdir, g) for g in GUARANTEES}
    print("\nthroughput (median of rounds, default commit interval 5 s):")
    for guarantee, rate in medians.items():
        print(f"  {guarantee:<14} {rate:10,.0f} records/s")
    ratio = medians["exactly_once"] / medians["at_least_once"]
    print(f"  exactly_once / at_least_once = {ratio:.2f} (goal >= 0.80)")
    print("\nend-to-end latency of clicked results, read_committed reader:")
    for guarantee, values in latency.items():
        print(f"  {guarantee:<14} {describe(values)}")
    if latency["at_least_once"] and latency["exactly_once"]:
        added = statistics.median(latency["exactly_once"]) - statistics.median(
            latency["at_least_once"]
        )
        print(f"  added by exactly_once (medians): {added * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impressions", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--live-s", type=float, default=20.0)
    parser.add_argument("--live-rate", type=int, default=300, help="impressions per second")
    asyncio.run(main(parser.parse_args()))
