"""`make docker-e2e`: docs/docker.md's commands (`COMMANDS`), run for real, and the demo's
pairs checked.

1. A container engine (engine.py: found, or Debian's docker.io with Compose v2 installed and
   started) and the two base images (standins.py: one line says when they are local stand-ins).
2. The page's commands, from the repository's root: Kafka, the topics, two workers and the
   traffic; the host's `streamjoin consume` reading the output; three workers, then two, while
   the traffic flows (only the workers: the one-shot services must not run again); the first
   command again (the one-shot services run again and add nothing); more traffic with another
   seed; `down --volumes`.
3. Checks: every pair of both runs present; none wrong (a click joined to another auction or with
   another delay, an impression written as not clicked although its click came); none lost to
   retention (every partition of the ads topics, changelogs among them, still starts at offset
   0, and the inputs hold each run's traffic exactly once).

The last line is the demo's: `joined: expected=E present=P duplicates=D`. Exit status 1 when a
check fails; 0 with one line saying why when no engine can be had here. Compose's output and the
consumer's go to a directory named at the start.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "apps" / "ads"), str(Path(__file__).resolve().parent)]

from aiokafka import TopicPartition  # noqa: E402
from data import AdTraffic  # noqa: E402
from engine import EngineUnavailable, start_engine  # noqa: E402
from session import WAIT_S, Reader, Run, container, started, workers  # noqa: E402
from standins import BaseImages  # noqa: E402
from traffic import CLICKS, IMPRESSIONS, live_traffic  # noqa: E402
from verify import OUTPUT, expected_delays  # noqa: E402

from streamjoin.errors import StreamJoinError  # noqa: E402
from streamjoin.kafka.admin import open_admin  # noqa: E402
from streamjoin.kafka.topics import partition_counts  # noqa: E402
from streamjoin.kafka.watermarks import log_bounds  # noqa: E402
from streamjoin.maven_jars import cache_dir  # noqa: E402

COMPOSE = "docker compose -f docker/docker-compose.yml"
COMMANDS = {
    "up": f"{COMPOSE} up --build --detach --scale worker=2",
    "read": f"streamjoin consume {OUTPUT} --wait --from-beginning --bootstrap localhost:9092",
    "scale out": f"{COMPOSE} up --detach --no-deps --no-recreate --scale worker=3 worker",
    "scale in": f"{COMPOSE} up --detach --no-deps --no-recreate --scale worker=2 worker",
    "more traffic": (
        f"{COMPOSE} run --rm traffic python demo.py --traffic-only --bootstrap kafka:19092 "
        "--seed 8 --impressions 10000"
    ),
    "down": f"{COMPOSE} down --volumes",
}
"""docs/docker.md's commands, in the order it gives them."""
BUILD = f"{COMPOSE} build"
"""Not one of them: the image the first one builds, built while the Kafka image is provided
(`up --build` then finds it built)."""

RUNS = {7: 40_000, 8: 10_000}
"""Seed and impressions of the traffic service's run (the demo's defaults) and the page's
second run."""
ONE_SHOT = ("topics", "traffic")
RESTORED = re.compile(r"task \S+ restored (\d+) records")
SHOWN = 5


@dataclass
class Verdict:
    """The output against the traffic: pairs expected, present, repeated, and records wrong."""

    expected: int
    present: int
    duplicates: int
    wrong: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"joined: expected={self.expected} present={self.present} duplicates={self.duplicates}"
        )


def judge(values: Iterable[str], runs: Iterable[AdTraffic]) -> Verdict:
    """Check output values (JSON of the ad join) against the traffic runs that made them."""
    delays: dict[str, int] = {}
    campaigns: dict[str, str] = {}
    for traffic in runs:
        delays.update(expected_delays(traffic))
        campaigns.update((i.auction_id, i.campaign) for i in traffic.impressions)
    joined: Counter[str] = Counter()
    wrong: list[str] = []
    for value in values:
        record = json.loads(value)
        auction = record["auction_id"]
        if campaigns.get(auction) != record["campaign"]:
            wrong.append(f"not an impression of the traffic: {value}")
        elif record["clicked"]:
            joined[auction] += 1
            if delays.get(auction) != record["click_delay_ms"]:
                wrong.append(f"joined, but its click came {delays.get(auction)} ms on: {value}")
        elif auction in delays:
            wrong.append(f"written as not clicked although its click came: {value}")
    present = sum(1 for auction in delays if joined[auction])
    duplicates = sum(count - 1 for count in joined.values() if count > 1)
    return Verdict(len(delays), present, duplicates, wrong)


async def retention_losses(bootstrap: str, runs: Iterable[AdTraffic]) -> list[str]:
    """Partitions of the ads topics (inputs, output, changelogs) whose log no longer starts at
    offset 0, and inputs that do not hold the traffic exactly once."""
    async with open_admin(bootstrap) as admin:
        counts = await partition_counts(admin)
    partitions = [
        TopicPartition(topic, p)
        for topic, count in sorted(counts.items())
        if topic.startswith("ads-")
        for p in range(count)
    ]
    bounds = await log_bounds(bootstrap, partitions)
    lost = [f"{b.topic}[{b.partition}] starts at offset {b.start}" for b in bounds if b.start]
    held = Counter[str]()
    for b in bounds:
        held[b.topic] += b.end
    traffic = list(runs)
    sent = {
        IMPRESSIONS: sum(len(t.impressions) for t in traffic),
        CLICKS: sum(len(t.clicks) for t in traffic),
    }
    lost += [
        f"{topic} holds {held[topic]} records, the traffic was {count}"
        for topic, count in sent.items()
        if held[topic] != count
    ]
    return lost


def restores(work: Path) -> str:
    """What the workers' logs say they restored (worker-3's at the hand-off, the others' after
    it left)."""
    said = []
    for name in ("worker-3.log", "containers.log"):
        path = work / name
        found = RESTORED.findall(path.read_text(errors="replace")) if path.is_file() else []
        said.append(f"{sum(int(n) for n in found):,} records over {len(found)} task restores")
    return f"worker-3 {said[0]}; the others {said[1]}"


def command(run: Run, name: str, *, timeout: float = WAIT_S) -> str:
    """Run one of the page's commands."""
    return run.execute(COMMANDS[name], name, timeout=timeout)


def demo(run: Run, reader_log: Path) -> tuple[Verdict | None, list[str]]:
    """The page's commands and the checks: the output's verdict (None if nothing was read)
    and the problems found (a failed command or wait, losses, wrong records)."""
    first, second = (live_traffic(impressions, seed) for seed, impressions in RUNS.items())
    command(run, "down")  # a clean start: no data of an earlier run
    command(run, "up", timeout=1800)
    reader = Reader(COMMANDS["read"], run.env, reader_log)
    run.say(f"$ {COMMANDS['read']} (in the background)")
    problems: list[str] = []
    try:
        run.until(lambda: reader.share(first) >= 0.25, "a quarter of the pairs joined")
        before = started(ONE_SHOT)
        command(run, "scale out")
        run.until(lambda: workers() == 3, "three workers")
        # Its log, which its removal at the scale-in would take with it.
        leaving = run.work / "worker-3.log"
        with leaving.open("w") as leaving_log:
            follower = subprocess.Popen(
                ["docker", "logs", "--follow", "streamjoin-worker-3"],
                stdout=leaving_log,
                stderr=subprocess.STDOUT,
            )
        run.until(lambda: "is running" in leaving.read_text(), "worker-3 took over tasks")
        run.until(lambda: reader.share(first) >= 0.6, "60% of the pairs joined")
        command(run, "scale in")
        run.until(lambda: workers() == 2, "two workers")
        follower.wait(30)
        if started(ONE_SHOT) != before:
            problems.append(f"scaling the workers ran {' and '.join(ONE_SHOT)} again")
        run.until(lambda: container("traffic", ".State.Status") == "exited", "traffic sent")
        run.until(lambda: reader.share(first) == 1.0, "every pair of the first traffic joined")
        command(run, "up")  # again: the one-shot services run again, and must add nothing
        run.until(lambda: started(["traffic"]) != {"traffic": before["traffic"]}, "traffic rerun")
        run.until(lambda: container("traffic", ".State.Status") == "exited", "traffic rerun done")
        command(run, "more traffic")
        run.until(lambda: reader.share(second) == 1.0, "every pair of the second traffic joined")
        lost = asyncio.run(retention_losses("localhost:9092", [first, second]))
        run.say(f"retention checked: {len(lost)} losses")
        problems += lost
    except (RuntimeError, subprocess.SubprocessError, StreamJoinError) as exc:
        problems.append(str(exc))
    finally:
        reader.stop()
        run.say("reading stopped")
    if not reader.values:
        return None, problems
    verdict = judge(reader.values, [first, second])
    return verdict, problems + verdict.wrong


def provide_images(run: Run, images: BaseImages) -> None:
    """The base images, and the streamjoin image built on the first while the second is
    provided (a Kafka stand-in takes minutes to build)."""
    run.say(images.first())
    if images.second_ready():
        run.say(images.second())
        return
    with ThreadPoolExecutor(1) as pool:
        built = pool.submit(run.execute, BUILD, "build", timeout=1800)
        run.say(images.second())
        built.result()


def main() -> None:
    cache = cache_dir("docker")
    try:
        engine = start_engine(cache)
    except EngineUnavailable as exc:
        print(f"docker-e2e: skipped, no container engine here: {exc}")
        return
    work = Path(tempfile.mkdtemp(prefix="streamjoin-docker-e2e-"))
    run = Run(work)
    run.say(f"docker-e2e: the commands' output is in {work}")
    verdict, problems = None, []
    images = BaseImages(cache)
    background = ThreadPoolExecutor(1)
    try:
        provide_images(run, images)
        kept = background.submit(images.keep)  # beside the demo
        verdict, problems = demo(run, work / "consume.err")
        if (said := kept.result()) is not None:
            run.say(said)
    except (RuntimeError, OSError, subprocess.SubprocessError, StreamJoinError) as exc:
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        background.shutdown()
        with (work / "containers.log").open("w") as logs:
            subprocess.run(
                [*shlex.split(COMPOSE), "logs", "--no-color"],
                cwd=ROOT,
                stdout=logs,
                stderr=subprocess.STDOUT,
                check=False,
            )
        run.say(f"restores: {restores(work)}")
        try:
            command(run, "down")
        finally:
            engine.stop()
    for problem in problems[:SHOWN]:
        run.say(f"problem: {problem}")
    if len(problems) > SHOWN:
        run.say(f"and {len(problems) - SHOWN} more problems")
    run.say(
        f"docker-e2e {'failed' if problems else 'passed'} in {time.monotonic() - run.started:.0f} s"
    )
    print(verdict.line() if verdict else "joined: nothing read")
    if problems or verdict is None or verdict.present != verdict.expected:
        sys.exit(1)


if __name__ == "__main__":
    main()
