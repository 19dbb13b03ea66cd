"""Random scenarios for every join kind Spark runs, in one app, and the order they are piped in.

The app has a join of each kind (two partitions per topic, one for the global table; joins of
one family read the same topics): windowed inner/left/outer (the left one with filter and
map_values), a windowed join reading through key_by, a chained join reading its output and a
global-table join reading it too, left stream-table joins on a plain and a versioned table and
a left global-table join, table-table inner/left/outer, foreign-key inner/left. Most joiners
are field mappings (native on Spark); the others are Python functions.

`generate` makes records with few keys, records out of order (late ones among them), records
without a key or a value, and table tombstones; every stream topic ends with a record far in the
future that matches its partner on the other side, so every non-match is emitted by the end.
`processing_order` is the order `streamjoin.spark.order` assumes, in which the test driver gets
them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streamjoin import App, JoinWindows
from streamjoin.dsl.fields import fields, left, right
from streamjoin.kafka.partitioning import partition_for_key

PARTITIONS = 2
KEYS = ("a", "b", "c")
CLOSERS = tuple(
    next(
        f"~close{n}"
        for n in range(100)
        if partition_for_key(f"~close{n}".encode(), PARTITIONS) == p
    )
    for p in range(PARTITIONS)
)
"""A key in each partition: the records far in the future that close every window there."""


@dataclass(frozen=True, slots=True)
class Piped:
    topic: str
    partition: int
    offset: int
    key: str | None
    value: dict[str, Any] | None
    timestamp: int

    @property
    def raw_key(self) -> bytes | None:
        return None if self.key is None else self.key.encode()

    @property
    def raw_value(self) -> bytes | None:
        return None if self.value is None else json.dumps(self.value).encode()


def both(left_value: Any, right_value: Any) -> dict[str, Any]:
    return {
        "l": None if left_value is None else left_value["id"],
        "r": None if right_value is None else right_value["id"],
    }


IDS = fields(l=left("id", str), r=right("id", str))
"""The joiner `both` as a field mapping: Spark runs it as native columns."""

WINDOWS = {
    "inner": JoinWindows(before=30, after=20, grace=10),
    "left": JoinWindows(before=0, after=40, grace=0),
    "outer": JoinWindows(before=25, after=25, grace=50),
}


def build_app() -> App:
    """Joins of every kind; joins of one family read the same topics."""
    app = App("spark-vs-driver")
    lhs, rhs = app.topic("w-l", partitions=PARTITIONS), app.topic("w-r", partitions=PARTITIONS)
    for how, window in WINDOWS.items():
        side = lhs
        if how == "left":
            side = lhs.filter(lambda v: v["n"] % 5 != 0).map_values(
                lambda v: {**v, "n": v["n"] + 1}
            )
        joiner = both if how == "left" else IDS
        app.join(side, rhs, window=window, how=how, into=f"w-{how}-out", name=f"w_{how}")(joiner)
    _chain(app)
    stream = app.topic("s", partitions=PARTITIONS)
    plain = app.table("st-t", partitions=PARTITIONS)
    versioned = app.table("vt-t", partitions=PARTITIONS, versioned=True, history_ms=40)
    countries = app.global_table("g-t", partitions=1)
    fk_left, fk_right = (app.table(f"fk-{s}", partitions=PARTITIONS) for s in ("l", "r"))
    app.join(stream, plain, how="left", into="st-out", name="st_left")(IDS)
    app.join(stream, versioned, how="left", into="vt-out", name="vt_left")(IDS)
    app.join(stream, countries, key=lambda v: v["g"], how="left", into="g-out", name="g_left")(IDS)
    for how in ("inner", "left"):
        app.join(
            fk_left,
            fk_right,
            foreign_key=lambda v: v["fk"],
            how=how,
            into=f"fk-{how}-out",
            name=f"fk_{how}",
        )(IDS)
    tt_left, tt_right = (app.table(f"tt-{s}", partitions=PARTITIONS) for s in ("l", "r"))
    for how in ("inner", "left", "outer"):
        app.join(tt_left, tt_right, how=how, into=f"tt-{how}-out", name=f"tt_{how}")(IDS)
    return app


def _chain(app: App) -> None:
    """A join reading through key_by, a join reading its output, and a global-table join
    reading it too."""
    first = app.topic("c-out", partitions=PARTITIONS)
    app.join(
        app.topic("k-l", partitions=PARTITIONS),
        app.topic("k-r", partitions=PARTITIONS).filter(lambda v: v["n"] % 7 != 0).key_by("k2"),
        window=JoinWindows(before=30, after=30, grace=20),
        how="left",
        into=first,
        name="rekeyed",
    )(both)
    app.join(
        first,
        app.topic("c-r", partitions=PARTITIONS),
        window=JoinWindows(before=40, after=10, grace=30),
        how="inner",
        into="c2-out",
        name="chained",
    )(lambda lv, rv: {"l": lv, "r": rv["id"]})
    app.join(
        first,
        app.global_table("g-t", partitions=1),
        key=lambda v: "xyz"[len(v["l"] or "") % 3],
        how="left",
        into="g2-out",
        name="global_chained",
    )(lambda lv, rv: {"l": lv["l"], "r": None if rv is None else rv["id"]})


STREAMS = ("w-l", "w-r", "k-l", "k-r", "c-r", "s")
TABLES = ("st-t", "vt-t", "fk-l", "fk-r", "tt-l", "tt-r")


def _times(rng: random.Random, count: int, late: float) -> Iterator[int]:
    """Mostly rising timestamps, some stepping back (late records)."""
    now = 100
    for _ in range(count):
        now += rng.randrange(0, 12)
        yield max(0, now - rng.randrange(40, 120)) if rng.random() < late else now


def _value(rng: random.Random, topic: str, n: int) -> dict[str, Any]:
    value: dict[str, Any] = {"id": f"{topic}#{n}", "n": rng.randrange(100)}
    value["k2"] = rng.choice(KEYS)
    value["g"] = rng.choice(["x", "y", "z"])
    value["fk"] = rng.choice(["c1", "c2", "c3", None])
    return value


def generate(seed: int, per_topic: int = 48) -> dict[str, list[Piped]]:
    """Each source topic's records in offset order (per partition), keyed to partitions as
    Kafka's default partitioner does."""
    rng = random.Random(seed)
    records: dict[str, list[Piped]] = {}
    offsets: dict[tuple[str, int], int] = {}
    last = 0

    def add(topic: str, key: str | None, value: dict[str, Any] | None, ts: int, parts: int) -> None:
        partition = rng.randrange(parts) if key is None else partition_for_key(key.encode(), parts)
        offset = offsets.get((topic, partition), 0)
        offsets[topic, partition] = offset + 1
        records.setdefault(topic, []).append(Piped(topic, partition, offset, key, value, ts))

    for topic in STREAMS:
        for n, ts in enumerate(_times(rng, per_topic, late=0.2)):
            key = None if rng.random() < 0.08 else rng.choice(KEYS)
            value = None if rng.random() < 0.05 else _value(rng, topic, n)
            add(topic, key, value, ts, PARTITIONS)
            last = max(last, ts)
    for topic in TABLES:
        keys = ("c1", "c2", "c3") if topic == "fk-r" else KEYS
        for n, ts in enumerate(_times(rng, per_topic // 2, late=0.3)):
            value = None if rng.random() < 0.2 else _value(rng, topic, n)
            add(topic, rng.choice(keys), value, ts, PARTITIONS)
    for n, code in enumerate(("x", "y", "z", "x")):
        ts = rng.randrange(100, 200)
        value = None if n == 3 and rng.random() < 0.5 else {"id": f"g-t#{n}", "g": code}
        add("g-t", code, value, ts, 1)
    close = last + 10_000
    for topic in STREAMS:
        for key in CLOSERS:
            closer = {"id": f"{topic}#{key}", "n": 1, "k2": key, "g": "x", "fk": None}
            add(topic, key, closer, close, PARTITIONS)
    return records


def processing_order(records: dict[str, list[Piped]], ranks: dict[str, int]) -> list[Piped]:
    """Every record in the order of `streamjoin.spark.order`: (head, rank, partition, offset)."""
    keyed = []
    for topic, piped in records.items():
        heads: dict[int, int] = {}
        for record in piped:
            head = max(heads.get(record.partition, record.timestamp), record.timestamp)
            heads[record.partition] = head
            keyed.append(((head, ranks[topic], record.partition, record.offset), record))
    return [record for _, record in sorted(keyed, key=lambda item: item[0])]
