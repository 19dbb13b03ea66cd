"""A scenario through streamjoin's TestDriver: the app its family declares, the records piped in
order, the outputs read back, and what went to the dead-letter topic."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from diff_kafka_streams import Outputs
from diff_scenarios import Scenario

from streamjoin import App, JoinWindows
from streamjoin.dsl.topics import Stream, Table, Topic
from streamjoin.testing import TestDriver

__all__ = ("Run", "build_app", "foreign_key", "run")

OUTPUT_TOPICS = ("mid", "out")


@dataclass
class Run:
    outputs: Outputs
    dead_letters: list[tuple[str | None, str | None, str]] = field(default_factory=list)
    """(key, value, reason) of each input record sent to the dead-letter topic."""
    causes: dict[str, list[int]] = field(default_factory=dict)
    """Per output topic, for each record, the index of the event whose piping wrote it."""


def foreign_key(value: str | None) -> str | None:
    """The part of a value before ':', None without one (as JoinHarness.foreignKey)."""
    if value is None or ":" not in value or value.startswith(":"):
        return None
    return value.split(":", 1)[0]


def joiner(left: str | None, right: str | None) -> str:
    return f"{'_' if left is None else left}+{'_' if right is None else right}"


def build_app(scenario: Scenario) -> App:
    """The streamjoin app of the scenario's family (as JoinHarness.build)."""
    params, kind, how = scenario.params, scenario.kind, scenario.how
    app = App("differential", max_task_idle_ms=params.get("idle", 0))
    out = app.topic("out", value_type=str)
    window = None
    if kind in ("ss", "chain"):
        window = JoinWindows(before=params["before"], after=params["after"], grace=params["grace"])
    left: Topic | Stream
    right: Topic
    if kind in ("tt", "fk"):
        left = app.table("left", value_type=str)
    else:
        left = app.topic("left", value_type=str)
        if params.get("rekey"):
            left = left.key_by(foreign_key, name="rekey")
    if kind in ("ss", "chain"):
        right = app.topic("right", value_type=str)
    elif kind == "gt":
        right = app.global_table("right", value_type=str)
    elif kind == "vst":
        right = app.table("right", value_type=str, versioned=True, history_ms=params["history"])
    else:
        right = app.table("right", value_type=str)
    if kind == "chain":
        mid = app.topic("mid", value_type=str)
        app.join(left, right, window=window, how=how, into=mid, name="first")(joiner)
        third: Table = app.table("third", value_type=str)
        app.join(mid, third, how="left", into=out, name="second")(joiner)
    elif kind == "fk":
        app.join(left, right, foreign_key=foreign_key, how=how, into=out, name="join")(joiner)
    elif kind == "gt":
        app.join(left, right, key=foreign_key, how=how, into=out, name="join")(joiner)
    else:
        app.join(left, right, window=window, how=how, into=out, name="join")(joiner)
    return app


def _reason(headers: dict[str, bytes]) -> str:
    error = headers.get("streamjoin.error.class", b"").decode()
    return f"{error}: {headers.get('streamjoin.error.message', b'').decode()}"


def run(scenario: Scenario, state_dir: Path | None = None) -> Run:
    app = build_app(scenario)
    outputs: Outputs = {}
    causes: dict[str, list[int]] = {}
    with TestDriver(app, state_dir=state_dir) as driver:
        topics = [t for t in OUTPUT_TOPICS if t in driver.topology.partitions]
        for index, event in enumerate(scenario.events):
            if event.topic == "wall":
                driver.advance_wall_clock(event.timestamp)
            else:
                driver.pipe(event.topic, event.value, key=event.key, timestamp=event.timestamp)
            for topic in topics:
                for r in driver.read_output(topic):
                    outputs.setdefault(topic, []).append((r.key, r.value, r.timestamp))
                    causes.setdefault(topic, []).append(index)
        dead = [
            (
                None if r.key is None else r.key.decode(),
                None if r.value is None else r.value.decode(),
                _reason(dict(r.headers)),
            )
            for r in driver.dead_letters()
        ]
    return Run(outputs, dead, causes)
