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
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "apps" / "ads"), str(Path(__file__).resolve().parent)]

from aiokafka import TopicPartition  # noqa: E402
from data import AdTraffic  # noqa: E402
from engine import EngineUnavailable, start_engine  # noqa: E402
from standins import provide_base_images  # noqa: E402
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
        f"{COMPOSE} run --rm traffic python demo.py --traffic-only --bootstrap kafka:19092 --seed 8"
    ),
    "down": f"{COMPOSE} down --volumes",
}
"""docs/docker.md's commands, in the order it gives them."""

SEEDS, IMPRESSIONS_PER_RUN = (7, 8), 40_000
"""The traffic service's seed (the demo's default) and the page's second run; its size."""
ONE_SHOT = ("topics", "traffic")
RESTORED = re.compile(r"task \S+ restored (\d+) records")
WAIT_S = 300.0
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


def value_of(line: str) -> str | None:
    """The value of one line of `streamjoin consume` (its last field), None if it has none."""
    _, found, value = line.rstrip("\n").partition(" value=")
    return value if found else None


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


class Reader:
    """The page's `streamjoin consume` in the background: the values it prints, and the
    auctions joined to their click, as they come."""

    def __init__(self, command: str, env: Mapping[str, str], log: Path) -> None:
        self.values: list[str] = []
        self.joined: set[str] = set()
        self._errors = log.open("w")
        self._process = subprocess.Popen(
            shlex.split(command),
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            value = value_of(line)
            if value is not None:
                self.values.append(value)
                record = json.loads(value)
                if record["clicked"]:
                    self.joined.add(record["auction_id"])

    def share(self, traffic: AdTraffic) -> float:
        """How much of `traffic`'s pairs has been read."""
        wanted = expected_delays(traffic).keys()
        return len(wanted & set(self.joined)) / len(wanted)

    def stop(self) -> None:
        """Ctrl-C, as a user stops it."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(30)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._thread.join(30)
        self._errors.close()


class Run:
    """One end-to-end run: commands with their output in `work`, steps said as they happen."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.started = time.monotonic()
        self.env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONUNBUFFERED": "1",
        }
        self.log = (work / "compose.log").open("a")

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.started:5.0f} s  {text}", flush=True)

    def command(self, name: str, *, timeout: float = WAIT_S) -> str:
        """Run one of the page's commands; its output goes to the log (and is returned)."""
        self.say(f"$ {COMMANDS[name]}")
        self.log.write(f"\n$ {COMMANDS[name]}\n")
        self.log.flush()
        done = subprocess.run(
            shlex.split(COMMANDS[name]),
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        self.log.write(done.stdout)
        self.log.flush()
        if done.returncode != 0:
            tail = "\n".join(done.stdout.strip().splitlines()[-20:])
            raise RuntimeError(f"{name} failed (exit {done.returncode}):\n{tail}")
        return done.stdout

    def until(self, condition: Callable[[], bool], what: str, within: float = WAIT_S) -> None:
        deadline = time.monotonic() + within
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"not within {within:.0f} s: {what}")
            time.sleep(1)
        self.say(what)


def _container(service: str, field_path: str) -> str:
    done = subprocess.run(
        ["docker", "inspect", "--format", f"{{{{{field_path}}}}}", f"streamjoin-{service}-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def _started(services: Iterable[str]) -> dict[str, str]:
    return {service: _container(service, ".State.StartedAt") for service in services}


def _workers() -> int:
    done = subprocess.run(
        ["docker", "ps", "--quiet", "--filter", "label=com.docker.compose.service=worker"],
        capture_output=True,
        text=True,
        check=False,
    )
    return len(done.stdout.split())


def demo(run: Run, reader_log: Path) -> tuple[Verdict | None, list[str]]:
    """The page's commands and the checks: the output's verdict (None if nothing was read)
    and the problems found (a failed command or wait, losses, wrong records)."""
    first, second = (live_traffic(IMPRESSIONS_PER_RUN, seed) for seed in SEEDS)
    run.command("down")  # a clean start: no data of an earlier run
    run.command("up", timeout=1800)
    reader = Reader(COMMANDS["read"], run.env, reader_log)
    run.say(f"$ {COMMANDS['read']} (in the background)")
    problems: list[str] = []
    try:
        run.until(lambda: reader.share(first) >= 0.25, "a quarter of the pairs joined")
        before = _started(ONE_SHOT)
        run.command("scale out")
        run.until(lambda: _workers() == 3, "three workers")
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
        run.command("scale in")
        run.until(lambda: _workers() == 2, "two workers")
        follower.wait(30)
        if _started(ONE_SHOT) != before:
            problems.append(f"scaling the workers ran {' and '.join(ONE_SHOT)} again")
        run.until(lambda: _container("traffic", ".State.Status") == "exited", "traffic sent")
        run.until(lambda: reader.share(first) == 1.0, "every pair of the first traffic joined")
        run.command("up")  # again: the one-shot services run again, and must add nothing
        run.until(lambda: _started(["traffic"]) != {"traffic": before["traffic"]}, "traffic rerun")
        run.until(lambda: _container("traffic", ".State.Status") == "exited", "traffic rerun done")
        run.command("more traffic")
        run.until(lambda: reader.share(second) == 1.0, "every pair of the second traffic joined")
        problems += asyncio.run(retention_losses("localhost:9092", [first, second]))
    except (RuntimeError, subprocess.SubprocessError, StreamJoinError) as exc:
        problems.append(str(exc))
    finally:
        reader.stop()
    if not reader.values:
        return None, problems
    verdict = judge(reader.values, [first, second])
    return verdict, problems + verdict.wrong


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
    try:
        run.say(provide_base_images(cache))
        verdict, problems = demo(run, work / "consume.err")
    except (RuntimeError, OSError, subprocess.SubprocessError, StreamJoinError) as exc:
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
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
            run.command("down")
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
