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
import os
import re
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from rich.progress import BarColumn, Progress, TaskID, TextColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from data import AdTraffic, generate_traffic
from report import Ownership, worker_report
from traffic import CLICK_WITHIN_S, CLICKS, IMPRESSIONS, console, produce_paced, send_once
from verify import OUTPUT, OutputLog, collect_output, expected_pairs
from workers import APP_DIR, WorkerProcess

from streamjoin.broker import BROKER_KINDS, local_broker
from streamjoin.kafka.security_config import connection_from_environment
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.query.client import QueryClient, QueryFailed

PARTITIONS = 8


def _lower_priority() -> None:
    """An observer yields the CPU to the workers it watches (the demo's run time stays)."""
    os.nice(10)


class StatusSteps:
    """`streamjoin status --once` at each step of the demo, as a user would type it; each runs
    beside the demo (it never holds the timeline up) and prints its view whole once done."""

    def __init__(self, bootstrap: str, workers: list[WorkerProcess], start: float) -> None:
        self.bootstrap, self.workers, self.start = bootstrap, workers, start
        self.pending: list[asyncio.Task[None]] = []

    def show(self, step: str) -> None:
        previous = self.pending[-1] if self.pending else None
        at = time.monotonic() - self.start
        self.pending.append(asyncio.create_task(self._show(step, at, previous)))

    async def _show(self, step: str, at: float, previous: asyncio.Task[None] | None) -> None:
        """Runs at once; prints after the step before it has printed (a loaded machine may
        finish a later snapshot first, and the log reads in the demo's order)."""
        # The embedded broker describes groups without their metadata: name the workers.
        urls = [f"http://127.0.0.1:{w.metrics_port}" for w in self.workers if w.running]
        args = ["status", "app:joins", "--app-dir", str(APP_DIR), "--bootstrap", self.bootstrap]
        args += ["--once", *(f"--worker={url}" for url in urls)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "streamjoin",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "150"},  # as wide as the demo's lines, whoever runs it
            preexec_fn=_lower_priority,
        )
        output, _ = await process.communicate()
        if previous is not None:
            await previous
        console.print(f"{at:5.1f} s  {step}: $ streamjoin {' '.join(args)}", markup=False)
        for line in output.decode(errors="replace").splitlines():
            if line.strip():  # the view's blank separator lines are left out of a log
                console.print(f"         {line.rstrip()}", markup=False)

    async def wait(self) -> None:
        await asyncio.gather(*self.pending)


async def watch_learners(
    worker: WorkerProcess, start: float, deadline: float, status: StatusSteps
) -> str:
    """Show the new worker's learners restoring until it runs tasks; returns how many records
    it still had to restore when it took them over."""
    learning: set[str] = set()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f} restored, {task.fields[remaining]} to go"),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        bars: dict[str, TaskID] = {}
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            samples = await asyncio.to_thread(worker.samples)
            if samples and not status.pending:
                status.show("scale-out, worker-3 in the group")
            remaining = samples.get("streamjoin_restore_remaining", {})
            restored = samples.get("streamjoin_restored_total", {})
            for labels, value in remaining.items():
                if 'standby="true"' not in labels:
                    continue
                task = re.search(r'task="([^"]+)"', labels).group(1)  # type: ignore[union-attr]
                if task not in bars:
                    if not learning:
                        status.show("learner warm-up")
                    learning.add(task)
                    console.print(f"{time.monotonic() - start:5.1f} s  worker-3 learns {task}")
                    bars[task] = progress.add_task(f"learner {task}", total=None, remaining="?")
                done = restored.get(labels, 0.0)
                progress.update(
                    bars[task], completed=done, total=done + value, remaining=f"{value:,.0f}"
                )
            running = samples.get("streamjoin_tasks", {}).get('state="running"', 0)
            if running:
                status.show("after the follow-up rebalance")
                handoff = samples.get("streamjoin_restored_before_running", {})
                console.print(
                    f"{time.monotonic() - start:5.1f} s  worker-3 runs {running:.0f} tasks after "
                    f"the follow-up rebalance (learned: {', '.join(sorted(learning)) or 'none'})"
                )
                return f"{sum(handoff.values()):,.0f} over {len(handoff)} tasks"
    return "worker-3 took over no task in time"


async def query_once(
    workers: list[WorkerProcess], traffic: AdTraffic, rate: float, start: float
) -> None:
    """Ask the running workers, as a web app would with streamjoin.QueryClient, for the
    impressions of an auction sent about 4 s ago (still in the join's window store), and say
    which worker answered; a few tries while the group rebalances."""
    names = {w.query_url: w.name for w in workers}
    asked = [w for w in workers if w.running]
    total = len(traffic.impressions) + len(traffic.clicks)
    failure = ""
    async with QueryClient([w.query_url for w in asked]) as client:
        for _ in range(20):
            share = min(1.0, max(0.0, (time.monotonic() - start - 4) * rate / total))
            auction = traffic.impressions[int(share * (len(traffic.impressions) - 1))].auction_id
            when = f"{time.monotonic() - start:5.1f} s"
            try:
                answer = await client.get("attribute-left", auction, allow_stale=True)
            except QueryFailed as exc:
                failure = f"{when}  query attribute-left {auction} failed: {exc}"
                await asyncio.sleep(0.5)
                continue
            count = len(answer["value"])
            lag = answer["lag_records"]  # None: a restoring copy whose changelog end is unknown
            console.print(
                f"{when}  query attribute-left {auction} via {asked[0].name}: {count} "
                f"record{'s' if count != 1 else ''}, answered by "
                f"{names.get(answer['served_by'])} ({answer['role']}, "
                f"lag {'unknown' if lag is None else f'{lag} records'})"
            )
            return
    console.print(failure)


def how_it_left(worker: WorkerProcess) -> str:
    """What a stopped worker's log says of its warm scale-in (runtime/process/draining.py):
    its tasks handed off warm, or why not."""
    said = [
        line.partition("draining: ")[2]
        for line in worker.log_path.read_text(errors="replace").splitlines()
        if "streamjoin.runtime.process.draining: stopping:" in line
    ]
    return said[-1] if said else "stopped"


async def at(start: float, seconds: float) -> None:
    await asyncio.sleep(max(0.0, start + seconds - time.monotonic()))


async def run(bootstrap: str, impressions: int, rate: float, seed: int, work_dir: Path) -> bool:
    await ensure_topics(
        connection_from_environment(bootstrap),
        [TopicSpec(t, PARTITIONS) for t in (IMPRESSIONS, CLICKS, OUTPUT)],
    )
    # Event times from now, as live traffic has: a broker's time-based retention (the windowed
    # changelogs' retention.ms) deletes records whose timestamps are already older than it.
    traffic = generate_traffic(impressions, start_ms=int(time.time() * 1000), seed=seed)
    expected = expected_pairs(traffic)
    total = len(traffic.impressions) + len(traffic.clicks)
    console.print(
        f"{len(traffic.impressions)} impressions, {len(traffic.clicks)} clicks, "
        f"at ~{rate:,.0f} records/s (~{total / rate:.0f} s)"
    )
    workers = [WorkerProcess(f"worker-{i}", bootstrap, work_dir) for i in (1, 2, 3)]
    log, stop_reading = OutputLog(expected), asyncio.Event()
    ownership, left = Ownership(IMPRESSIONS), dict[str, float]()
    try:
        for worker in workers[:2]:
            worker.start()
        console.print("started worker-1 and worker-2")
        reader = asyncio.create_task(collect_output(bootstrap, PARTITIONS, log, stop_reading))
        start = time.monotonic()
        status = StatusSteps(bootstrap, workers, start)
        following = asyncio.create_task(ownership.follow(workers, start, stop_reading))
        producing = asyncio.create_task(produce_paced(bootstrap, traffic, rate, start))
        await at(start, 12)
        workers[2].start()
        console.print(f"{time.monotonic() - start:5.1f} s  worker-3 joins (scale-out)")
        restored_at_handoff = await watch_learners(workers[2], start, start + 45, status)
        await at(start, 30)
        left["worker-1"] = time.monotonic() - start
        console.print(f"{left['worker-1']:5.1f} s  worker-1 leaves (scale-in)")
        await asyncio.to_thread(workers[0].stop)
        console.print(f"{time.monotonic() - start:5.1f} s  worker-1 {how_it_left(workers[0])}")
        await query_once(workers, traffic, rate, start)
        status.show("scale-in, worker-1 gone")
        _, produced_at = await producing
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(log.complete.wait(), 60)
        finished = time.monotonic()
        snapshots = {w.name: w.samples() for w in workers if w.running}
        await status.wait()
        stop_reading.set()
        await reader
        await following
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
    console.print(f"records worker-3 restored at hand-off: {restored_at_handoff}")
    pauses = {
        task: (pause, began - start)
        for task, (pause, began) in log.longest_pauses(
            start + 8, max(produced_at, start + 8)
        ).items()
    }
    for line in worker_report(snapshots, pauses, ownership, left):
        console.print(line)
    ok = present == len(expected)
    if not ok:
        for worker in workers:
            console.print(f"[dim]--- {worker.name} log tail ---\n{worker.log_tail()}[/]")
    console.print(f"joined: expected={len(expected)} present={present} duplicates={duplicates}")
    return ok


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this Kafka broker instead of starting one")
    parser.add_argument(
        "--broker",
        choices=BROKER_KINDS,
        default="tansu",
        help="the broker to start: the embedded Tansu, or Apache Kafka (make kafka-jars once)",
    )
    parser.add_argument("--impressions", type=int, default=40_000)
    parser.add_argument(
        "--rate",
        type=float,
        default=1_200,
        help="records per second (--traffic-only sends each record at its own time instead)",
    )
    parser.add_argument(
        "--traffic-only",
        action="store_true",
        help="only send live traffic (stamped from now, each record at its own time) to "
        "--bootstrap, into topics that exist (for workers run elsewhere, as in "
        "docker/docker-compose.yml); once per seed",
    )
    parser.add_argument(
        "--seed", type=int, default=7, help="the traffic's seed: its auctions and clicks"
    )
    parser.add_argument(
        "--click-within-s",
        type=float,
        default=CLICK_WITHIN_S,
        help="--traffic-only: a click comes at most this long after its impression",
    )
    return parser


def main() -> None:
    args = arguments().parse_args()
    if args.traffic_only:
        if args.bootstrap is None:
            sys.exit("--traffic-only needs --bootstrap HOST:PORT")
        asyncio.run(send_once(args.bootstrap, args.impressions, args.seed, args.click_within_s))
        return
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            started = local_broker(args.broker)
            bootstrap = stack.enter_context(started).bootstrap
            console.print(f"{started.name} broker on {bootstrap} (data removed on exit)")
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamjoin-demo-")))
        ok = asyncio.run(run(bootstrap, args.impressions, args.rate, args.seed, work_dir))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
