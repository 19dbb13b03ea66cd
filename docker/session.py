"""Running docs/docker.md's commands for docker/e2e.py: each command said as it starts,
its output kept in a log; the page's `streamjoin consume` read in the background; Compose's
containers looked at."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from data import AdTraffic
from verify import expected_delays

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 300.0


def value_of(line: str) -> str | None:
    """The value of one line of `streamjoin consume` (its last field), None if it has none."""
    _, found, value = line.rstrip("\n").partition(" value=")
    return value if found else None


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
        self._logging = threading.Lock()

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.started:5.0f} s  {text}", flush=True)

    def execute(self, line: str, name: str, *, timeout: float = WAIT_S) -> str:
        """Run a command line; its output goes to the log (and is returned)."""
        self.say(f"$ {line}")
        done = subprocess.run(
            shlex.split(line),
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        with self._logging:
            self.log.write(f"\n$ {line}\n{done.stdout}")
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


def container(service: str, field_path: str) -> str:
    done = subprocess.run(
        ["docker", "inspect", "--format", f"{{{{{field_path}}}}}", f"streamjoin-{service}-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def started(services: Iterable[str]) -> dict[str, str]:
    return {service: container(service, ".State.StartedAt") for service in services}


def workers() -> int:
    done = subprocess.run(
        ["docker", "ps", "--quiet", "--filter", "label=com.docker.compose.service=worker"],
        capture_output=True,
        text=True,
        check=False,
    )
    return len(done.stdout.split())
