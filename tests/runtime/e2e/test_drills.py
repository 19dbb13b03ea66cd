"""The drill matrix on Apache Kafka (issue 35): `streamjoin worker` processes of the clicks app
under steady traffic, with default settings (the harness's shorter commit interval and session
timeout aside, for the suite's time), through one fault each:

    sigkill                  a worker killed mid-stream
    broker_restart           the broker stopped and started again on its port and data
    broker_stall             the broker frozen (SIGSTOP) past the session timeout
    slow_broker_at_start     workers started while the broker does not answer (frozen 12 s)
    failing_send_on_revoke   a worker's output sends fail while a new worker takes tasks over

Each ends with every result present, none wrong, any worker that failed saying why in one line
(no traceback anywhere), and duplicates within one commit interval: the output topic keeps the
broker's append time, and every repeated output's first copy was appended at most a commit
interval (and a few seconds for the commit itself under load) before the fault began. The
drills share one broker of their own (they stop and freeze it), run one after the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import failing_send_app
import pytest
import worker_processes as processes

from streamjoin.broker import KafkaBroker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

AUCTIONS = 3_000
PACE_S = 0.2
"""A pause per 100 records produced: at most 250 auctions a second, over 12 s or more."""
COMMIT_INTERVAL_S = 0.5  # the harness's (worker_processes.Workers)
COMMIT_TAKES_S = 3.0
"""How long a commit may take on a loaded machine (its flush waits for the broker)."""
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
STALL_S = 12.0
"""Past the session timeout (6 s) and the start-up connection's 10 s request timeout."""


class DrillBroker:
    """Apache Kafka with a data directory, so that it can be restarted on its port."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.kafka = KafkaBroker(data_dir=data_dir)
        self.bootstrap = self.kafka.start()

    @property
    def pid(self) -> int:
        assert self.kafka.pid is not None
        return self.kafka.pid

    def restart(self, after_s: float) -> None:
        self.kafka.stop()
        time.sleep(after_s)
        self.kafka = KafkaBroker(self.kafka.port, data_dir=self.data_dir)
        self.kafka.start()

    def stop(self) -> None:
        self.kafka.stop()


@pytest.fixture(scope="module")
def drill_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DrillBroker]:
    broker = DrillBroker(tmp_path_factory.mktemp("drill-kafka"))
    try:
        yield broker
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(broker.pid, signal.SIGCONT)
        broker.stop()


@dataclass
class Drill:
    broker: DrillBroker
    workers: processes.Workers
    suffix: str
    expected_exits: dict[str, int | None] = field(default_factory=dict)
    """Worker -> its exit status at the end (None: killed, not checked)."""
    producing: asyncio.Task[None] | None = None
    fault_at_ms: float = 0.0

    def fault(self) -> None:
        """The fault begins now."""
        self.fault_at_ms = time.time() * 1000

    def start(self, name: str, app: str = "clicks_app:joins", **env: str) -> None:
        self.workers.start(name, env=env, app=app)
        self.expected_exits[name] = 0

    async def traffic(self) -> None:
        """Once every worker started runs tasks, the auctions in time order, paced."""
        for name in self.expected_exits:
            await self.workers.wait_for_log(name, "is running", within_s=90)
        self.producing = asyncio.create_task(
            processes.produce(self.broker.bootstrap, self.suffix, range(AUCTIONS), PACE_S)
        )

    async def mid_stream(self) -> None:
        """Until some auctions are joined, while traffic still flows."""
        await processes.read_joined(self.broker.bootstrap, self.suffix, want=200, within_s=90)
        assert self.producing is not None and not self.producing.done(), "faults come mid-stream"


async def sigkill(drill: Drill) -> None:
    drill.start("w1")
    drill.start("w2")
    await drill.traffic()
    await drill.mid_stream()
    drill.fault()
    drill.workers.signal("w1", signal.SIGKILL)
    drill.expected_exits["w1"] = None


async def broker_restart(drill: Drill) -> None:
    drill.start("w1")
    drill.start("w2")
    await drill.traffic()
    await drill.mid_stream()
    drill.fault()
    await asyncio.to_thread(drill.broker.restart, 3.0)


async def broker_stall(drill: Drill) -> None:
    drill.start("w1")
    drill.start("w2")
    await drill.traffic()
    await drill.mid_stream()
    drill.fault()
    os.kill(drill.broker.pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(STALL_S)
    finally:
        os.kill(drill.broker.pid, signal.SIGCONT)


async def slow_broker_at_start(drill: Drill) -> None:
    drill.fault()
    os.kill(drill.broker.pid, signal.SIGSTOP)
    try:
        stalled = time.monotonic()
        drill.start("w1")
        drill.start("w2")
        for name in ("w1", "w2"):
            await drill.workers.wait_for_log(name, "does not answer yet", within_s=60)
        await asyncio.sleep(max(0.0, STALL_S - (time.monotonic() - stalled)))
    finally:
        os.kill(drill.broker.pid, signal.SIGCONT)
    await drill.traffic()


async def failing_send_on_revoke(drill: Drill) -> None:
    hold = drill.workers.tmp / "hold-outputs"
    drill.start("w1", "failing_send_app:joins", **{failing_send_app.HOLD_ENV: str(hold)})
    await drill.traffic()
    await drill.mid_stream()
    drill.fault()
    hold.touch()
    await drill.workers.wait_for_log("w1", failing_send_app.HELD_LOG, within_s=60)
    drill.start("w2")
    drill.expected_exits["w1"] = 2


DRILLS: dict[str, Callable[[Drill], Awaitable[None]]] = {
    "sigkill": sigkill,
    "broker_restart": broker_restart,
    "broker_stall": broker_stall,
    "slow_broker_at_start": slow_broker_at_start,
    "failing_send_on_revoke": failing_send_on_revoke,
}


@pytest.mark.parametrize("fault", DRILLS)
async def test_drill(fault: str, drill_broker: DrillBroker, unique: str, tmp_path: Path) -> None:
    bootstrap = drill_broker.bootstrap
    await ensure_topics(
        bootstrap,
        [
            TopicSpec(f"impressions-{unique}", processes.PARTITIONS),
            TopicSpec(f"clicks-{unique}", processes.PARTITIONS),
            TopicSpec(f"attributed-{unique}", processes.PARTITIONS, APPEND_TIME),
        ],
    )
    drill = Drill(drill_broker, processes.Workers(bootstrap, unique, tmp_path), unique)
    try:
        await DRILLS[fault](drill)
        assert drill.producing is not None
        await drill.producing
        outputs = await processes.read_outputs(
            bootstrap, unique, want=AUCTIONS, within_s=180, settle_s=3
        )
    finally:
        if drill.producing is not None:
            drill.producing.cancel()
        codes = drill.workers.stop_all()
    logs = drill.workers.logs()
    missing = sorted(set(range(AUCTIONS)) - outputs.keys())
    wrong = {
        a: copies
        for a, copies in outputs.items()
        if a not in range(AUCTIONS)
        or any(v != {"auction": a, "delay": processes.click_delay_ms(a)} for _, v in copies)
    }
    repeated = {a: min(t for t, _ in copies) for a, copies in outputs.items() if len(copies) > 1}
    before_ms = sorted(drill.fault_at_ms - t for t in repeated.values())
    window_ms = (COMMIT_INTERVAL_S + COMMIT_TAKES_S) * 1000
    print(
        f"{fault}: {len(missing)} missing, {len(wrong)} wrong, "
        f"{sum(len(c) - 1 for c in outputs.values())} repeated outputs of {len(repeated)} "
        f"auctions, first copies appended up to {max(before_ms, default=0):.0f} ms before the fault"
    )
    assert not missing, f"{len(missing)} missing, e.g. {missing[:20]}\n{logs}"
    assert not wrong, f"wrong outputs, e.g. {list(wrong.items())[:5]}"
    assert not before_ms or before_ms[-1] <= window_ms, (
        f"{sum(b > window_ms for b in before_ms)} repeated outputs appended more than "
        f"{window_ms:.0f} ms before the fault, the earliest {before_ms[-1]:.0f} ms"
    )
    for name, expected in drill.expected_exits.items():
        log = (tmp_path / f"{name}.log").read_text(errors="replace")
        assert "Traceback" not in log, f"{name}:\n{log[-5000:]}"
        if expected is None:
            continue
        assert codes[name] == expected, f"{name} exited {codes[name]}\n{logs}"
        if expected:
            last = log.splitlines()[-1]
            assert last.startswith("error: "), f"{name} did not end in one line: {last}"
