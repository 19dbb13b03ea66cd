"""Seeded random join scenarios, one family at a time, and how a scenario is written down.

A scenario is a join (its family's parameters) and the records piped into its inputs, in order.
Values name their record ("L3", "R1"; "x:L3" where a foreign key rides in the value: the part
before ':'), so an output value ("L3+R1", "_" for a missing side) names the records it joins.
Keys come from a small alphabet so that records meet; a few keys and values are null, a few
table records are tombstones. Each scenario ends with one record far later on each input (and,
where tasks idle, the wall clock moved on), so that both engines emit every non-match still
waiting (their key, "zz", joins nothing else).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

__all__ = ("FAMILIES", "SENTINEL_KEY", "Event", "Scenario", "describe", "generate", "split_closing")

SENTINEL_KEY = "zz"
KEYS = ("a", "b", "c")
FOREIGN_KEYS = ("x", "y")


@dataclass(frozen=True, slots=True)
class Event:
    """A record piped into `topic`, or (topic "wall") the wall clock moved on by `timestamp`."""

    topic: str
    key: str | None
    value: str | None
    timestamp: int


@dataclass(frozen=True, slots=True)
class Scenario:
    family: str
    kind: str
    """ss, st, vst, tt, fk, gt or chain (see JoinHarness.java)."""
    how: str
    params: dict[str, int] = field(default_factory=dict)
    """before, after, grace (windows), history (versioned), idle (max_task_idle_ms), rekey."""
    events: tuple[Event, ...] = ()

    def with_events(self, events: tuple[Event, ...]) -> Scenario:
        return replace(self, events=events)

    def header(self) -> str:
        """The harness's scenario line."""
        params = " ".join(f"{name}={value}" for name, value in sorted(self.params.items()))
        return f"scenario family={self.kind} how={self.how} {params}".rstrip()


@dataclass(frozen=True, slots=True)
class _Family:
    kind: str
    hows: tuple[str, ...]
    late: bool = False
    rekey: bool = False
    idle: bool = False


FAMILIES: dict[str, _Family] = {
    "stream-stream inner": _Family("ss", ("inner",)),
    "stream-stream left": _Family("ss", ("left",)),
    "stream-stream outer": _Family("ss", ("outer",)),
    "stream-stream inner, late records": _Family("ss", ("inner",), late=True),
    "stream-stream left, late records": _Family("ss", ("left",), late=True),
    "stream-stream outer, late records": _Family("ss", ("outer",), late=True),
    "stream-stream, max_task_idle_ms": _Family("ss", ("inner", "left", "outer"), idle=True),
    "stream-stream, key_by": _Family("ss", ("inner", "left", "outer"), late=True, rekey=True),
    "stream-table inner": _Family("st", ("inner",)),
    "stream-table left": _Family("st", ("left",)),
    "stream-table, key_by": _Family("st", ("inner", "left"), rekey=True),
    "versioned stream-table inner": _Family("vst", ("inner",)),
    "versioned stream-table left": _Family("vst", ("left",)),
    "table-table inner": _Family("tt", ("inner",)),
    "table-table left": _Family("tt", ("left",)),
    "table-table outer": _Family("tt", ("outer",)),
    "foreign-key inner": _Family("fk", ("inner",)),
    "foreign-key left": _Family("fk", ("left",)),
    "global table inner": _Family("gt", ("inner",)),
    "global table left": _Family("gt", ("left",)),
    "chained: stream-stream into stream-table": _Family("chain", ("inner",), late=True),
}


class _Records:
    """Draws the records of one scenario."""

    def __init__(self, rng: random.Random, foreign_keys: bool) -> None:
        self.rng = rng
        self.count = {"L": 0, "R": 0, "T": 0}
        self.foreign_keys = foreign_keys

    def key(self, nullable: bool = True) -> str | None:
        if nullable and self.rng.random() < 0.04:
            return None
        return self.rng.choice(KEYS)

    def value(self, side: str, null_rate: float) -> str | None:
        if self.rng.random() < null_rate:
            return None
        self.count[side] += 1
        name = f"{side}{self.count[side]}"
        if self.foreign_keys and side == "L" and self.rng.random() < 0.9:
            return f"{self.rng.choice(FOREIGN_KEYS)}:{name}"
        return name


def _times(rng: random.Random, n: int, disorder: int, late: int) -> list[int]:
    """n timestamps that mostly rise; some fall back up to `disorder`, a few up to `late`."""
    times, now = [], 20
    for _ in range(n):
        now += rng.randint(0, 6)
        roll = rng.random()
        if late and roll < 0.15:
            times.append(max(0, now - rng.randint(disorder + 1, late)))
        elif disorder and roll < 0.4:
            times.append(max(0, now - rng.randint(0, disorder)))
        else:
            times.append(now)
    return times


def generate(family: str, rng: random.Random) -> Scenario:
    """One random scenario of `family`."""
    spec = FAMILIES[family]
    kind, how = spec.kind, rng.choice(spec.hows)
    params: dict[str, int] = {}
    n = rng.randint(3, 14)
    disorder, late = 8, 0
    if kind in ("ss", "chain"):
        params.update(before=rng.randint(0, 12), after=rng.randint(0, 12), grace=rng.randint(0, 10))
        if not any(params.values()):
            params["grace"] = 1  # streamjoin refuses a window that joins nothing (docs/joins.md)
        disorder = params["grace"] + max(params["before"], params["after"])
        if spec.late:
            late = disorder + params["before"] + params["after"] + params["grace"] + 15
    if kind == "vst":
        params["history"] = rng.randint(1, 15)
        late = 25
    if spec.rekey:
        params["rekey"] = 1
    if spec.idle:
        params["idle"] = rng.choice((5, 50))
    records = _Records(rng, foreign_keys=kind in ("fk", "gt") or spec.rekey)
    tables = {"st": ("right",), "vst": ("right",), "tt": ("left", "right")}.get(kind, ())
    tables += {"fk": ("left", "right"), "gt": ("right",), "chain": ("third",)}.get(kind, ())
    topics = ["left", "right"] + (["third"] if kind == "chain" else [])
    events: list[Event] = []
    for timestamp in _times(rng, n, disorder, late):
        topic = rng.choice(topics)
        side = {"left": "L", "right": "R", "third": "T"}[topic]
        is_table = topic in tables
        key = records.key()
        if kind == "fk" and topic == "right":
            key = rng.choice(FOREIGN_KEYS + (None,) * (rng.random() < 0.05))
        elif kind == "gt" and topic == "right":
            key = rng.choice(FOREIGN_KEYS)
        value = records.value(side, 0.25 if is_table else 0.04)
        events.append(Event(topic, key, value, timestamp))
        if spec.idle and rng.random() < 0.3:
            events.append(Event("wall", None, None, rng.choice((1, 10, 60))))
    end = max((e.timestamp for e in events if e.topic != "wall"), default=0) + 1_000
    for topic in topics:
        if topic not in tables:
            side = {"left": "L", "right": "R", "third": "T"}[topic]
            value = f"{side}end"
            if records.foreign_keys and side == "L":
                value = f"{SENTINEL_KEY}:{value}"
            events.append(Event(topic, SENTINEL_KEY, value, end))
    if spec.idle:  # what still waits for an empty input goes now
        events.append(Event("wall", None, None, 1_000))
    return Scenario(family, kind, how, params, tuple(events))


def split_closing(events: tuple[Event, ...]) -> tuple[tuple[Event, ...], tuple[Event, ...]]:
    """(the scenario's own events, the closing ones: the records far later on each input and
    the wall clock moved on past any idling, which make both engines emit what waits)."""
    first = next((i for i, e in enumerate(events) if e.key == SENTINEL_KEY), len(events))
    return events[:first], events[first:]


_SIDE_NAMES = {"left": "L", "right": "R", "third": "T"}


def _token(text: str | None) -> str:
    return "null" if text is None else f"`{text}`"


def describe(scenario: Scenario) -> str:
    """The scenario as the issue writes one: join, parameters, then the events in order."""
    params = ", ".join(
        f"{name}={value}" + (" ms" if name in ("before", "after", "grace", "history") else "")
        for name, value in sorted(scenario.params.items())
    )
    parts = []
    for event in scenario.events:
        if event.topic == "wall":
            parts.append(f"wall clock +{event.timestamp} ms")
        else:
            value = "tombstone" if event.value is None else event.value
            parts.append(
                f"{_SIDE_NAMES[event.topic]} {_token(event.key)}={value} @{event.timestamp}"
            )
    head = f"{scenario.family} ({scenario.kind} {scenario.how}"
    head += f"; {params})" if params else ")"
    return f"{head}; events {', '.join(parts)}"
