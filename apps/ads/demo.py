"""The streamjoin demo: attribute ad clicks to impressions while workers come and go.

Starts the embedded broker (unless --bootstrap is given), creates the topics (8 partitions),
starts two workers (`streamjoin worker app:joins`), produces impressions and clicks at a steady
rate, scales out to three workers, then lets one leave, and finally checks that every
impression-click pair the generator made was joined. The last line is the verification:
`joined: expected=E present=P duplicates=D`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from aiokafka import AIOKafkaProducer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import AdTraffic, Click, generate_traffic
from verify import OUTPUT, OutputLog, collect_output, expected_pairs, pause_summary
from workers import WorkerProcess

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

IMPRESSIONS, CLICKS, PARTITIONS = "ads-impressions", "ads-clicks", 8
console = Console(highlight=False)


async def produce_paced(bootstrap: str, traffic: AdTraffic, rate: float) -> int:
    """Send the traffic in time order at about `rate` records per second."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    sent, started = 0, time.monotonic()
    try:
        for record in traffic.in_time_order():
            topic = CLICKS if isinstance(record, Click) else IMPRESSIONS
            await producer.send(
                topic,
                record.encode(),
                key=record.auction_id.encode(),
                timestamp_ms=record.timestamp_ms,
            )
            sent += 1
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0.02:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()
    return sent


async def watch_learners(worker: WorkerProcess, start: float, deadline: float) -> str:
    """Show the new worker's learners restoring until it runs tasks; returns how many records
    it still had to restore when it took them over."""
    learning: set[str] = set()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f} restored, {task.fields[remaining]} to go"),
        console=console,
        transient=True,
    ) as progress:
        bars: dict[str, TaskID] = {}
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            samples = await asyncio.to_thread(worker.samples)
            remaining = samples.get("streamjoin_restore_remaining", {})
            restored = samples.get("streamjoin_restored_total", {})
            for labels, value in remaining.items():
                if 'standby="true"' not in labels:
                    continue
                task = labels.split('"')[1]
                if task not in bars:
                    learning.add(task)
                    console.print(f"{time.monotonic() - start:5.1f} s  worker-3 learns {task}")
                    bars[task] = progress.add_task(f"learner {task}", total=None, remaining="?")
                done = restored.get(labels, 0.0)
                progress.update(
                    bars[task], completed=done, total=done + value, remaining=f"{value:,.0f}"
                )
            running = samples.get("streamjoin_tasks", {}).get('state="running"', 0)
            if running:
                handoff = samples.get("streamjoin_restored_before_running", {})
                console.print(
                    f"{time.monotonic() - start:5.1f} s  worker-3 runs {running:.0f} tasks after "
                    f"the follow-up rebalance (learned: {', '.join(sorted(learning)) or 'none'})"
                )
                return f"{sum(handoff.values()):,.0f} over {len(handoff)} tasks"
    return "worker-3 took over no task in time"


async def at(start: float, seconds: float) -> None:
    await asyncio.sleep(max(0.0, start + seconds - time.monotonic()))


async def run(bootstrap: str, impressions: int, rate: float, work_dir: Path) -> bool:
    await ensure_topics(
        bootstrap, [TopicSpec(t, PARTITIONS) for t in (IMPRESSIONS, CLICKS, OUTPUT)]
    )
    # Event times from now, as live traffic has: a broker's time-based retention (the windowed
    # changelogs' retention.ms) deletes records whose timestamps are already older than it.
    traffic = generate_traffic(impressions, start_ms=int(time.time() * 1000))
    expected = expected_pairs(traffic)
    total = len(traffic.impressions) + len(traffic.clicks)
    console.print(
        f"{len(traffic.impressions)} impressions, {len(traffic.clicks)} clicks, "
        f"at ~{rate:,.0f} records/s (~{total / rate:.0f} s)"
    )
    workers = [WorkerProcess(f"worker-{i}", bootstrap, work_dir) for i in (1, 2, 3)]
    log, stop_reading = OutputLog(expected), asyncio.Event()
    try:
        for worker in workers[:2]:
            worker.start()
        console.print("started worker-1 and worker-2")
        reader = asyncio.create_task(collect_output(bootstrap, PARTITIONS, log, stop_reading))
        start = time.monotonic()
        producing = asyncio.create_task(produce_paced(bootstrap, traffic, rate))
        await at(start, 12)
        workers[2].start()
        console.print(f"{time.monotonic() - start:5.1f} s  worker-3 joins (scale-out)")
        restored_at_handoff = await watch_learners(workers[2], start, deadline=start + 45)
        await at(start, 30)
        console.print(f"{time.monotonic() - start:5.1f} s  worker-1 leaves (scale-in)")
        await asyncio.to_thread(workers[0].stop)
        sent = await producing
        produced_at = time.monotonic()
        console.print(f"{produced_at - start:5.1f} s  all {sent} records produced")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(log.complete.wait(), 60)
        finished = time.monotonic()
        metrics = {w.name: w.metrics() for w in workers if w.running}
        stop_reading.set()
        await reader
    finally:
        for worker in workers:
            await asyncio.to_thread(worker.stop)
    present = sum(1 for auction in expected if log.pairs[auction])
    duplicates = sum(n - 1 for n in log.pairs.values() if n > 1)
    elapsed = finished - start
    console.print(
        f"output: {sum(log.pairs.values())} joined, {log.unclicked} unclicked "
        f"in {elapsed:.1f} s ({(sum(log.pairs.values()) + log.unclicked) / elapsed:,.0f} records/s)"
    )
    rebalances = ", ".join(
        f"{name} {int(m.get('streamjoin_rebalances_total', 0))}" for name, m in metrics.items()
    )
    console.print(f"assignments received: {rebalances} (worker-1 left earlier)")
    console.print(f"records worker-3 restored at hand-off: {restored_at_handoff}")

    def total(name: str) -> float:
        return sum(m.get(f"streamjoin_{name}", 0) for m in metrics.values())

    console.print(
        f"remaining workers: {total('records_in_total'):,.0f} input records fetched, "
        f"{total('late_dropped_total'):,.0f} dropped as late, "
        f"{total('dead_letters_total'):,.0f} dead letters"
    )
    pauses = log.longest_pauses(start + 8, max(produced_at, start + 8))
    console.print(f"longest output pause of each task: {pause_summary(pauses)}")
    ok = present == len(expected)
    if not ok:
        for worker in workers:
            console.print(f"[dim]--- {worker.name} log tail ---\n{worker.log_tail()}[/]")
    console.print(f"joined: expected={len(expected)} present={present} duplicates={duplicates}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this Kafka broker instead of starting one")
    parser.add_argument(
        "--broker",
        choices=BROKER_KINDS,
        default="tansu",
        help="the broker to start: the embedded Tansu, or Apache Kafka (make kafka-jars once)",
    )
    parser.add_argument("--impressions", type=int, default=40_000)
    parser.add_argument("--rate", type=float, default=1_200, help="records per second")
    args = parser.parse_args()
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            started = local_broker(args.broker)
            bootstrap = stack.enter_context(started).bootstrap
            console.print(f"{started.name} broker on {bootstrap} (data removed on exit)")
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamjoin-demo-")))
        ok = asyncio.run(run(bootstrap, args.impressions, args.rate, work_dir))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
