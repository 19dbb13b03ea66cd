"""`streamjoin status` end to end on Apache Kafka: two workers, then a third whose learner warms
up, the follow-up rebalance, the task active on the new worker; the live terminal view of the
same run; and a group whose endpoint does not answer. The `status` commands are docs/status.md's
("Watching the group"), with the test's group, broker and app put in.

The workers run in this event loop (harness.py) so the test can hold the new worker's
follow-up until it has looked (the worker's catch-up trigger off: the test makes the very
check the trigger makes) and can read its restore in small fetches (a learner several
fetches long, so its lag is seen falling). `streamjoin status` itself runs as users run it: a
process reading the group through the broker and the workers through their endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pty
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import harness
import pytest
from worker_processes import EVENT_T0, Workers

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.process import state as process_state
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.reader import ReaderConfig

pytestmark = [pytest.mark.broker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "grafana" / "streamjoin.json"
PARTITIONS = 3
STATE_RECORDS = 10_000
"""Impressions per partition before the third worker joins: its learner's restore."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")


def readme_status(option: str, group: str, bootstrap: str) -> list[str]:
    """docs/status.md's `streamjoin status` command with `option` ("": the one with no option but
    --bootstrap), its group, broker and app replaced with the test's."""
    text = (ROOT / "docs" / "status.md").read_text()
    commands = [
        line.split()[2:] for line in text.splitlines() if line.startswith("streamjoin status ")
    ]
    [args] = [c for c in commands if (option in c if option else len(c) == 3)]
    app = ["learn_app:joins", "--app-dir", str(Path(__file__).resolve().parent)]
    swap = {"kafka:9092": [bootstrap], "ads": [group], "app:joins": app}
    return [word for arg in args for word in swap.get(arg, [arg])]


def status_cli(*args: str, suffix: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamjoin", "status", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "STREAMJOIN_TEST_SUFFIX": suffix},
    )


async def status_json(group: str, bootstrap: str) -> dict[str, Any]:
    done = await asyncio.to_thread(status_cli, *readme_status("json", group, bootstrap))
    assert done.returncode == 0, done.stderr
    snapshot: dict[str, Any] = json.loads(done.stdout)
    return snapshot


async def stable_status_json(group: str, bootstrap: str, within_s: float = 60) -> dict[str, Any]:
    """The JSON snapshot once the group is Stable: a broker describes no protocol while a
    rebalance is under way (under load the second worker's join may still be settling)."""
    deadline = time.monotonic() + within_s
    while True:
        snapshot = await status_json(group, bootstrap)
        if snapshot["state"] == "Stable" or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.5)


@contextlib.contextmanager
def _ctrl_c_as_in_a_terminal() -> Iterator[None]:
    """A suite started in the background (`make test &`, a CI runner) ignores SIGINT, and a child
    started meanwhile inherits that: the view would never see the Ctrl-C this test sends. With a
    handler installed here, the child starts with the default, as under a terminal's shell."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class TerminalView:
    """`streamjoin status` live, on a pseudo-terminal 200 columns wide, its output kept."""

    def __init__(self, *args: str, suffix: str) -> None:
        master, slave = pty.openpty()
        os.set_blocking(master, False)
        self._master = master
        self.output = bytearray()
        env = {**os.environ, "COLUMNS": "200", "LINES": "80", "TERM": "xterm-256color"}
        env["STREAMJOIN_TEST_SUFFIX"] = suffix
        with _ctrl_c_as_in_a_terminal():
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streamjoin", "status", *args],
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                start_new_session=True,
            )
        os.close(slave)
        asyncio.get_running_loop().add_reader(master, self._read)

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            self.output += os.read(self._master, 65536)

    def text(self) -> str:
        return _ANSI.sub("", self.output.decode(errors="replace"))

    async def stop(self) -> str:
        """Ctrl-C, as a user ends it; the text it showed."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGINT)
        await asyncio.to_thread(self.process.wait, 30)
        await asyncio.sleep(0.2)
        asyncio.get_running_loop().remove_reader(self._master)
        self._read()
        os.close(self._master)
        return self.text()


async def test_status_shows_a_learner_warming_up_the_follow_up_and_the_hand_off(
    kafka_broker: Broker,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="streamjoin")  # the workers' account, if it fails
    bs = kafka_broker.bootstrap
    # A group whose one worker advertises an endpoint nobody answers at: started first, read last.
    silent = Workers(bs, f"{unique}-silent", tmp_path, app="learn_app:joins")
    await ensure_topics(
        bs,
        [
            TopicSpec(f"{kind}-{suffix}", partitions)
            for suffix, partitions in ((unique, PARTITIONS), (silent.suffix, 1))
            for kind in ("imp", "clk", "out")
        ],
    )
    port, nobody = str(harness.free_port()), "http://127.0.0.1:9"
    silent.start("silent", "--metrics-port", port, "--advertised-metrics-url", nobody)

    app = harness.make_app(unique, acceptable_recovery_lag=0, probing_rebalance_interval_s=600)
    ports = [harness.free_port() for _ in range(3)]
    first, second = (
        harness.Running(app, bs, tmp_path / f"w{i + 1}", metrics_port=ports[i]) for i in range(2)
    )
    # Its catch-up trigger off: the learner stays one until the test has looked.
    third = harness.Running(
        app, bs, tmp_path / "w3", metrics_port=ports[2], followup_on_catch_up=False
    )
    async with harness.workers(first, second, third):
        await two_workers_with_state(first, second, app.app_id, unique)
        live = readme_status("", app.app_id, bs)
        assert live[0] == "learn_app:joins"  # the app's form: its app id is the group
        view = TerminalView(*live, "--interval", "0.5", suffix=unique)
        try:
            # The new worker restores in fetches of a few hundred records.
            monkeypatch.setattr(
                process_state,
                "ReaderConfig",
                partial(ReaderConfig, max_partition_fetch_bytes=16_384, max_poll_records=200),
            )
            await third.start()
            new = third.worker.manager.roles.process_id[:8]  # type: ignore[union-attr]
            lags = await learner_lags(ports[2])
            assert max(lags) > 0 and lags[-1] == 0, f"the learner's lag fell: {lags}"
            assert lags == sorted(lags, reverse=True), f"and never rose: {lags}"
            learning, old = await the_learner(app.app_id, bs, new)
            # The view refreshes every 0.5 s once started (seconds under load): seen, then on.
            await harness.until(lambda: f"learner {new} lag" in view.text(), 60, "view: learner")
            # The check the catch-up trigger makes: the learner caught up, so it asks.
            third.worker.followup.check(time.monotonic(), time.time() * 1000)
            await handed_over(third, app.app_id, bs, learning, old, new)
            moved = f"{learning} active {old} -> {new} (output paused"
            await harness.until(lambda: moved in view.text(), 60, "view: the hand-off")
            await dashboard_metrics_exist(ports[2])
        finally:
            shown = await view.stop()
    print(shown[shown.rfind("group learn-") :])
    assert "follow-up" in shown
    assert "did not answer" not in shown

    # The silent group: the assignment from the group itself, and who did not answer.
    once = readme_status("--once", f"learn-{silent.suffix}", bs)
    done = await asyncio.to_thread(status_cli, *once)
    silent.stop_all()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    quiet = (tmp_path / "state-silent" / f"learn-{silent.suffix}" / "process.id").read_text()[:8]
    [said] = [line for line in lines if line.startswith("did not answer:")]
    assert said.startswith(f"did not answer: {quiet} ({nobody}: cannot connect"), said
    assert any(re.match(rf"\s*0_0\s+{quiet}\s", line) for line in lines), done.stdout


async def two_workers_with_state(
    first: harness.Running, second: harness.Running, group: str, unique: str
) -> None:
    """Two workers run every task, with state built and committed (the changelogs complete)."""
    bs = first.worker.kafka.bootstrap
    await first.start()
    await second.start()
    await harness.until(
        lambda: len(first.running_tasks()) + len(second.running_tasks()) == PARTITIONS,
        60,
        "two workers run every task",
    )
    await harness.send(
        bs, f"imp-{unique}", range(PARTITIONS * STATE_RECORDS), partitions=PARTITIONS
    )
    before = await stable_status_json(group, bs)
    assert before["protocol"] == "streamjoin-tasks"
    assert before["rebalance_protocol"] == "cooperative"
    assert len(before["members"]) == 2 and all(m["answered"] for m in before["members"])
    assert [len(t["active"]) for t in before["tasks"]] == [1] * PARTITIONS
    await harness.until(lambda: _processed(first, second), 60, "the state built")
    built_ms = time.time() * 1000

    def committed(r: harness.Running) -> bool:
        """Since the state was built; or it read nothing (its task came to it after the other
        had processed the records, and that one committed them as it handed the task over)."""
        manager = r.worker.manager
        nothing = manager is not None and not manager.positions()
        return (r.worker.last_commit_ms or 0) > built_ms or nothing

    await harness.until(lambda: committed(first) and committed(second), 30, "and committed")


async def learner_lags(port: int) -> list[int]:
    """The new worker's learner lag, as its /status says it, until it is caught up."""
    lags: list[int] = []
    async with aiohttp.ClientSession() as session:
        while not lags or lags[-1] > 0:
            async with session.get(f"http://127.0.0.1:{port}/status") as response:
                [member] = (await response.json())["members"]
            lags += [
                task["changelog_lag"]
                for task in member["tasks"].values()
                if task["role"] == "learner" and task["changelog_lag"] is not None
            ]
    return lags


async def the_learner(group: str, bs: str, new: str) -> tuple[str, str]:
    """`status --format json` shows the caught-up learner waiting for its follow-up; returns
    its task and the worker running it."""
    warming = await status_json(group, bs)
    [learning] = [t for t in warming["tasks"] if t["learners"]]
    [copy] = learning["learners"]
    assert copy["worker"] == new
    assert copy["changelog_lag"] == 0 and copy["eta_s"] == 0
    assert copy["followup"]["on_catch_up"] is False  # this worker waits for probing
    assert copy["followup"]["probing_at_ms"] > time.time() * 1000
    [active] = learning["active"]
    assert active["worker"] != new and active["state"] == "running"
    assert any("member-joined" in r["reasons"] for r in warming["rebalances"])
    return learning["task"], active["worker"]


async def handed_over(
    third: harness.Running, group: str, bs: str, task: str, old: str, new: str
) -> None:
    """The follow-up moves `task` to the new worker; once records flow, its output pause shows."""
    moved = TaskId("attribute", int(task.split("_")[1]))
    await harness.until(lambda: moved in third.running_tasks(), 60, "the hand-off")
    await harness.send(
        bs,
        f"imp-{group.removeprefix('learn-')}",
        range(moved.partition, 60, PARTITIONS),
        ts0=EVENT_T0 + 100_000,
        partitions=PARTITIONS,
    )
    after: dict[str, Any] = {"rebalances": []}
    deadline = time.monotonic() + 60
    while not _paused(after, task, new):
        assert time.monotonic() < deadline, json.dumps(after["rebalances"], indent=1)
        after = await status_json(group, bs)
    [shown] = [t for t in after["tasks"] if t["task"] == task]
    assert [a["worker"] for a in shown["active"]] == [new]
    assert shown["learners"] == []
    assert {m["worker"] for m in after["members"]} >= {old, new}
    followups = [r for r in after["rebalances"] if "follow-up" in r["reasons"]]
    assert len(followups) >= 2, after["rebalances"]  # the learner's, then the revoking one's
    assert "group" not in [reason for r in followups for reason in r["reasons"]]


async def dashboard_metrics_exist(port: int) -> None:
    """Every metric the Grafana dashboard names is served by a real worker (one that has had a
    hand-off: every family is there, most with samples)."""
    dashboard = json.loads(DASHBOARD.read_text())
    named = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bstreamjoin_\w+", target["expr"])
    }
    assert len(named) >= 15, named
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        scraped = await response.text()
    served = set(re.findall(r"^(?:# (?:HELP|TYPE) )?(streamjoin_\w+)", scraped, re.MULTILINE))
    assert named <= served, f"named by the dashboard, not served: {sorted(named - served)}"
    assert re.search(r"^streamjoin_handoffs_total 1\.0$", scraped, re.MULTILINE), scraped


def _processed(*running: harness.Running) -> bool:
    """Every fetched record processed, none left to fetch."""
    for r in running:
        manager, consumer = r.worker.manager, r.worker.consumer
        if manager is None or manager.buffered() or not consumer.assignment():
            return False
        if any(consumer.lag(tp) != 0 for tp in consumer.assignment()):
            return False
    return True


def _paused(snapshot: dict[str, Any], task: str, worker: str) -> bool:
    return any(
        m["task"] == task and m["worker"] == worker and m["to"] == "active" and m["pause_s"]
        for r in snapshot.get("rebalances", [])
        for m in r["moves"]
    )
