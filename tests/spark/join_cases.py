"""The shared table of join cases that the test driver, the worker on the broker and Spark batch
must all agree on, and the app that declares them (each case twice: a joiner function and the
same joiner as a field mapping).

Each case lists its records in the order a streaming task processes them (timestamp order
across the two inputs, offset order within each), so the test driver, which processes records as
piped, sees them as the worker does. Every case ends with a matching pair far in the future
that closes all windows, so every non-match is due by the end.

The worker loads this module as `join_cases:app`, with its names suffixed by
STREAMJOIN_TEST_SUFFIX so runs sharing one broker never meet.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from streamjoin import App, JoinWindows
from streamjoin.dsl.fields import fields, left, right
from streamjoin.dsl.spec import JoinKind

Side = Literal["L", "R"]
CLOSE_AT = 1_000_000
"""Timestamp of each case's closing pair (key "~close"): later than every window + grace."""


@dataclass(frozen=True, slots=True)
class Record:
    side: Side
    key: str | None
    id: str
    ts: int
    n: int = 1

    @property
    def value(self) -> dict[str, Any]:
        return {"id": self.id, "n": self.n}


@dataclass(frozen=True, slots=True)
class JoinCase:
    name: str
    how: JoinKind
    before: int
    after: int
    grace: int
    records: tuple[Record, ...]
    expected: frozenset[tuple[str | None, str | None]]
    """(left id, right id) of every result the workers give, closer excluded."""

    @property
    def all_records(self) -> tuple[Record, ...]:
        return (
            *self.records,
            Record("L", "~close", "close-l", CLOSE_AT),
            Record("R", "~close", "close-r", CLOSE_AT),
        )

    def topic(self, side: Side, suffix: str) -> str:
        return f"{self.name}-{side}-{suffix}"

    def output(self, joiner: str, suffix: str) -> str:
        return f"{self.name}-{joiner}-out-{suffix}"


def L(key: str | None, id_: str, ts: int, n: int = 1) -> Record:  # noqa: N802 - reads as a side
    return Record("L", key, id_, ts, n)


def R(key: str | None, id_: str, ts: int, n: int = 1) -> Record:  # noqa: N802
    return Record("R", key, id_, ts, n)


CASES: tuple[JoinCase, ...] = (
    JoinCase(
        "inner",
        "inner",
        10,
        10,
        0,
        (L("k", "l1", 100, 2), R("k", "r1", 105, 3), R("x", "r2", 106)),
        frozenset({("l1", "r1")}),
    ),
    JoinCase(
        "bounds",
        "inner",
        10,
        20,
        0,
        (
            R("k", "r89", 89),
            R("k", "r90", 90),
            L("k", "l", 100),
            R("k", "r120", 120),
            R("k", "r121", 121),
        ),
        frozenset({("l", "r90"), ("l", "r120")}),
    ),
    JoinCase(
        "left",
        "left",
        10,
        10,
        0,
        (L("k", "l1", 100), L("j", "l2", 100), R("x", "rx", 105), R("k", "r1", 110)),
        frozenset({("l1", "r1"), ("l2", None)}),
    ),
    JoinCase(
        "outer",
        "outer",
        5,
        5,
        0,
        (L("a", "la", 100), R("b", "rb", 101), L("c", "lc", 102), R("c", "rc", 103)),
        frozenset({("la", None), (None, "rb"), ("lc", "rc")}),
    ),
    JoinCase(
        "duplicates",
        "inner",
        10,
        10,
        0,
        (L("k", "l1", 100), L("k", "l2", 100, 5), R("k", "r1", 100, 7), R("k", "r2", 100)),
        frozenset({("l1", "r1"), ("l1", "r2"), ("l2", "r1"), ("l2", "r2")}),
    ),
    JoinCase(
        # r-late reaches stream time 200 (its window closed at 105 + 10 + 5), late, yet the left
        # store (its side's time 100) still keeps l1: they join, as in Kafka Streams. l-late
        # reaches the left side at 300: the store keeps nothing that old, and nothing can match
        # it, so it is a non-match at once.
        "late",
        "left",
        10,
        10,
        5,
        (
            L("k", "l1", 100),
            R("x", "rx", 200),
            R("k", "r-late", 105),
            L("z", "lz", 300),
            L("k2", "l-late", 150),
        ),
        frozenset({("l1", "r-late"), ("lz", None), ("l-late", None)}),
    ),
    JoinCase(
        # r1 comes after stream time 130 but within grace: it still matches, and l1's
        # non-match is never emitted.
        "grace",
        "left",
        10,
        10,
        50,
        (L("k", "l1", 100), L("x", "lx", 130), R("y", "ry", 130), R("k", "r1", 105)),
        frozenset({("l1", "r1"), ("lx", None)}),
    ),
    JoinCase(
        "empty-left",
        "outer",
        10,
        10,
        0,
        (R("k", "r1", 100), R("j", "r2", 110)),
        frozenset({(None, "r1"), (None, "r2")}),
    ),
    JoinCase(
        "empty-right",
        "left",
        10,
        10,
        0,
        (L("k", "l1", 100), L("j", "l2", 110)),
        frozenset({("l1", None), ("l2", None)}),
    ),
    JoinCase(
        "null-keys",
        "outer",
        10,
        10,
        0,
        (L(None, "ln", 100), R(None, "rn", 101), L("k", "lk", 102), R("k", "rk", 103)),
        frozenset({("ln", None), (None, "rn"), ("lk", "rk")}),
    ),
)


def pair(left_value: dict[str, Any] | None, right_value: dict[str, Any] | None) -> dict[str, Any]:
    """The function joiner; `MAPPING` is the same thing declared as fields."""
    return {
        "l": left_value["id"] if left_value else None,
        "r": right_value["id"] if right_value else None,
        "sum": left_value["n"] + right_value["n"] if left_value and right_value else None,
    }


MAPPING = fields(l=left("id", str), r=right("id", str), sum=left("n", int) + right("n", int))
JOINERS = {"fn": pair, "map": MAPPING}


def join_name(case: JoinCase, joiner: str) -> str:
    return f"{case.name}_{joiner}"


def build_app(suffix: str) -> App:
    app = App(f"cases-{suffix}")
    for case in CASES:
        left_topic = app.topic(case.topic("L", suffix), partitions=1)
        right_topic = app.topic(case.topic("R", suffix), partitions=1)
        window = JoinWindows(before=case.before, after=case.after, grace=case.grace)
        for joiner_name, joiner in JOINERS.items():
            app.join(
                left_topic,
                right_topic,
                window=window,
                how=case.how,
                into=app.topic(case.output(joiner_name, suffix), partitions=1),
                name=join_name(case, joiner_name),
            )(joiner)
    return app


app = build_app(os.environ.get("STREAMJOIN_TEST_SUFFIX", "local"))
