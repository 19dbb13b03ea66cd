"""Records/s of `streamjoin worker --processes 1` against `--processes 2` on the ad join, in the
same run, on the same data and the same embedded broker.

The demo's traffic (apps/ads/data.py: N impressions 10 ms apart, 30% clicked within a minute)
is produced in time order, before anything is timed, to two identical topic sets of P
partitions, one per contender. Each contender is `streamjoin worker` as a user starts it, on
the ad join (bench/ads_join.py), with `--commit-interval 0.5` and its own state directory.
It is timed from the first input record any of its processes fetched (the host's metrics
endpoint, polled) until the group's committed offsets cover every input record (polled every
0.2 s; a commit comes after the outputs are acknowledged). Printed per contender: input
records/s, seconds, CPU seconds of each worker process (start-up included: about 1-2 s of
imports), the cores they used together (CPU / seconds) and CPU per record, and the broker's
CPU over the timed span; then the ratio processes 2 / processes 1 (goal >= 1.6x). On a shared
machine (other processes using the same cores) the ratio says what the second process gained
with what was left, not what 2 idle cores give: the cores used tell how much that was.

    python bench/processes.py [--impressions 150000] [--partitions 8] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from ads_join import topic_names
from aiokafka import AIOKafkaConsumer, TopicPartition
from contenders import produce as produce_traffic

from streamjoin.broker import EmbeddedBroker
from streamjoin.broker.base import free_port
from streamjoin.kafka.topics import TopicSpec, ensure_topics

BENCH_DIR = Path(__file__).resolve().parent
_TICK_S = os.sysconf("SC_CLK_TCK")
_APP = """
import sys
sys.path.insert(0, {bench!r})
from aiokafka import AIOKafkaConsumer, TopicPartition
from ads_join import make_app
joins = make_app({prefix!r})
"""


@dataclass(frozen=True)
class Outcome:
    processes: int
    records: int
    seconds: float
    cpu_by_process: dict[str, float]
    broker_cpu_s: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def cpu_seconds(pid: int) -> float:
    """User + system CPU of `pid` so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK_S


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return sorted(int(p) for p in path.read_text().split()) if path.exists() else []


def records_fetched(port: int) -> float:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return 0.0
    return sum(float(v) for v in re.findall(r"^streamjoin_records_in_total\S* (\S+)$", text, re.M))


async def until_committed(bootstrap: str, prefix: str, partitions: int, records: int) -> None:
    """Until the group's committed input offsets add up to `records` (polled every 0.2 s)."""
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=prefix)
    await reader.start()
    inputs = [TopicPartition(t, p) for t in topic_names(prefix)[:2] for p in range(partitions)]
    try:
        for _ in range(1_000_000):
            offsets = [await reader.committed(tp) for tp in inputs]
            if sum(offset or 0 for offset in offsets) >= records:
                return
            await asyncio.sleep(0.2)
    finally:
        await reader.stop()


async def produce(bootstrap: str, prefixes: list[str], impressions: int, partitions: int) -> int:
    specs = [TopicSpec(t, partitions) for p in prefixes for t in topic_names(p)]
    await ensure_topics(bootstrap, specs)
    return await produce_traffic(bootstrap, prefixes, impressions)


@dataclass(frozen=True)
class Contender:
    prefix: str
    processes: int
    records: int
    partitions: int


async def run_worker(
    bootstrap: str, broker_pid: int, contender: Contender, workdir: Path
) -> Outcome:
    prefix, processes, records = contender.prefix, contender.processes, contender.records
    module = f"bench_app_{prefix.replace('-', '_')}"
    (workdir / f"{module}.py").write_text(_APP.format(bench=str(BENCH_DIR), prefix=prefix))
    port = free_port("127.0.0.1")
    with (workdir / f"{prefix}.log").open("wb") as log:
        worker = subprocess.Popen(  # noqa: ASYNC220 - started once, not awaited
            [
                sys.executable,
                "-m",
                "streamjoin",
                "worker",
                f"{module}:joins",
                "--app-dir",
                str(workdir),
                "--bootstrap",
                bootstrap,
                "--state-dir",
                str(workdir / f"state-{prefix}"),
                "--commit-interval",
                "0.5",
                "--processes",
                str(processes),
                "--metrics-port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        while records_fetched(port) == 0:
            if worker.poll() is not None:
                tail = (workdir / f"{prefix}.log").read_text(errors="replace").splitlines()[-15:]
                raise SystemExit("the worker exited:\n" + "\n".join(tail))
            await asyncio.sleep(0.05)
        started, broker_cpu = time.monotonic(), cpu_seconds(broker_pid)
        await until_committed(bootstrap, prefix, contender.partitions, records)
        seconds = time.monotonic() - started
        broker_cpu = cpu_seconds(broker_pid) - broker_cpu
        pids = [worker.pid] if processes == 1 else children(worker.pid)
        cpu = {str(pid): cpu_seconds(pid) for pid in pids}
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
    return Outcome(processes, records, seconds, cpu, broker_cpu)


async def run(bootstrap: str, broker_pid: int, args: argparse.Namespace, workdir: Path) -> None:
    run_id = uuid.uuid4().hex[:6]
    plan = [(n, f"procs-{run_id}-{r}-{n}") for r in range(args.rounds) for n in (1, 2)]
    records = await produce(bootstrap, [p for _, p in plan], args.impressions, args.partitions)
    print(f"{records:,} input records per contender, {args.partitions} partitions")
    outcomes: dict[int, list[Outcome]] = {1: [], 2: []}
    for processes, prefix in plan:
        contender = Contender(prefix, processes, records, args.partitions)
        outcome = await run_worker(bootstrap, broker_pid, contender, workdir)
        outcomes[processes].append(outcome)
        cpu = ", ".join(f"{s:.1f}" for s in outcome.cpu_by_process.values())
        total = sum(outcome.cpu_by_process.values())
        print(
            f"--processes {processes}: {outcome.rate:>9,.0f} records/s  {outcome.seconds:6.1f} s"
            f"  CPU s per worker process [{cpu}] ({total / outcome.seconds:.2f} cores,"
            f" {total / records * 1e6:.0f} us/record)  broker CPU {outcome.broker_cpu_s:.1f} s"
        )
    best = {n: max(o.rate for o in found) for n, found in outcomes.items()}
    print(
        f"ratio --processes 2 / --processes 1: {best[2] / best[1]:.2f}x (best of "
        f"{args.rounds} round(s) each; goal >= 1.6x); cores usable here: "
        f"{len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f} at the end"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--impressions", type=int, default=150_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="streamjoin-procs-") as workdir,
        EmbeddedBroker() as broker,
    ):
        assert broker.pid is not None
        print(f"embedded broker {broker.bootstrap}, load average {os.getloadavg()[0]:.1f}")
        asyncio.run(run(broker.bootstrap, broker.pid, args, Path(workdir)))


if __name__ == "__main__":
    main()
