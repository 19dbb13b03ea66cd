"""Random scenarios for `spark-stream`'s windowed joins, and what Spark's streaming join gives on
them by its rules: a model the test checks Spark against, and explains `TestDriver`'s
differences with.

Records are produced before the query starts, so its micro-batches are known: each topic is a
source of its own, read `PER_BATCH` records a micro-batch, shared out between its partitions as
streamjoin's Python source does (`bounded_ends`). Spark's rules, for a query with one join
(spark-stream sets `allowMultiple=false` there, so late rows are those behind the micro-batch's
own watermark):

- each input's watermark delay is the window's reach on the other side plus grace
  (`after + grace` for the left, `before + grace` for the right: compiler.py);
- micro-batch k runs at watermark W(k): W(0) = 0; after each micro-batch, the least over the
  inputs that have had rows of (their largest event time - delay), if that is higher. Rows are
  those that reach the join: after filter and key_by, with a value, and with a key unless
  their side's non-matches are emitted (pipeline.py's `admitted` leaves the others out before
  the watermark: they neither count as late nor move it);
- a row at t <= W(k) is dropped (counted in `numRowsDroppedByWatermark`). A kept row finds every
  kept partner (Spark evicts a row from state only once no kept row can match it), so the
  results are every window pair of kept rows (same key and partition, right.t in
  [left.t - before, left.t + after], at the larger time), and for left/outer joins each kept
  row of an outer side without one (keyless rows included), emitted once the watermark passes
  it: by the end, as every topic ends with records far in the future that close all windows.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from json_records import Output, Record
from scenarios import Piped, processing_order

from streamjoin import App, JoinWindows
from streamjoin.dsl.fields import fields, left, right
from streamjoin.dsl.topics import Stream, Topic
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.spark.kafka.offsets import OffsetRange
from streamjoin.spark.kafka.stream_source import StreamOffsets, bounded_ends

PARTITIONS = 2
PER_BATCH = 6
"""Records of a topic per micro-batch (three of each partition)."""
SPAN = 40
"""Milliseconds of event time a micro-batch's in-order records spread over."""
IDS = fields(l=left("id", str), r=right("id", str))


def _keys(partition: int, prefix: str, count: int) -> tuple[str, ...]:
    found = (f"{prefix}{n}" for n in range(1000))
    return tuple(k for k in found if partition_for_key(k.encode(), PARTITIONS) == partition)[:count]


KEYS = {p: _keys(p, "k", 2) for p in range(PARTITIONS)}
"""Two keys in each partition."""
CLOSERS = {p: _keys(p, "~close", 1)[0] for p in range(PARTITIONS)}
"""A key in each partition for the records far in the future that close every window there."""


def _kept_left(value: dict[str, Any] | None) -> bool:
    return value is not None and bool(value["n"] % 5)


def _kept_right(value: dict[str, Any] | None) -> bool:
    return value is not None and bool(value["n"] % 7)


@dataclass(frozen=True, slots=True)
class WindowedCase:
    """One windowed join of the scenario app."""

    how: Literal["inner", "left", "outer"]
    window: JoinWindows
    steps: bool = False
    """filter on the left; filter and key_by("k2") on the right"""

    @property
    def delays(self) -> tuple[int, int]:
        w = self.window
        return w.after_ms + w.grace_ms, w.before_ms + w.grace_ms


CASES = (
    WindowedCase("inner", JoinWindows(before=30, after=20, grace=10)),
    WindowedCase("left", JoinWindows(before=0, after=40, grace=0), steps=True),
    WindowedCase("outer", JoinWindows(before=25, after=25, grace=50)),
)
EDGES = sorted(
    {
        edge + d
        for case in CASES
        for edge in (-case.window.before_ms, case.window.after_ms, 0)
        for d in (-1, 0, 1)
    }
)
"""Right-record offsets from a left record at and around every window's edges."""


def topics(s: str) -> tuple[str, str]:
    return f"wl-{s}", f"wr-{s}"


def build_app(s: str) -> App:
    """The three joins over the same two topics (the left one through filter and key_by)."""
    app = App(f"stream-random-{s}")
    lt, rt = topics(s)
    lhs, rhs = app.topic(lt, partitions=PARTITIONS), app.topic(rt, partitions=PARTITIONS)
    for case in CASES:
        a: Topic | Stream = lhs
        b: Topic | Stream = rhs
        if case.steps:
            a, b = lhs.filter(_kept_left), rhs.filter(_kept_right).key_by("k2")
        app.join(a, b, window=case.window, how=case.how, into=f"{case.how}-{s}", name=case.how)(IDS)
    return app


def partition_of(record: Record) -> int:
    key = record[1]
    return 0 if key is None else partition_for_key(key.encode(), PARTITIONS)


def generate(seed: int, s: str, blocks: int = 4) -> list[Piped]:
    """Records in production order: `blocks` micro-batches' worth of each topic, mostly in time
    order within a block of SPAN ms (out of order inside it), some on the window edges of an
    earlier left record (its key), some late (up to 160 ms behind); then the closers."""
    rng = random.Random(seed)
    offsets: dict[tuple[str, int], int] = {}
    out: list[Piped] = []
    lefts: list[Piped] = []
    lt, rt = topics(s)

    def add(topic: str, key: str | None, value: dict[str, Any] | None, ts: int) -> None:
        partition = partition_of((topic, key, value, ts))
        offset = offsets.get((topic, partition), 0)
        offsets[topic, partition] = offset + 1
        out.append(Piped(topic, partition, offset, key, value, ts))

    for block in range(blocks):
        base = 100_000 + block * SPAN
        for topic in (lt, rt):
            for partition in range(PARTITIONS):
                for _ in range(PER_BATCH // PARTITIONS):
                    n = len(out)
                    key: str | None = rng.choice(KEYS[partition])
                    ts = base + rng.randrange(SPAN)
                    roll = rng.random()
                    mates = [r for r in lefts if r.partition == partition and r.key is not None]
                    if topic == rt and roll < 0.3 and mates:
                        mate = rng.choice(mates)
                        key, ts = mate.key, mate.timestamp + rng.choice(EDGES)
                    elif roll > 0.8:
                        ts = base - rng.randrange(20, 160)
                    if partition == 0 and rng.random() < 0.08:
                        key = None
                    value: dict[str, Any] | None = {
                        "id": f"{topic[:2]}#{n}",
                        "n": rng.randrange(100),
                        "k2": key,
                    }
                    if rng.random() < 0.05:
                        value = None
                    add(topic, key, value, ts)
                    if topic == lt:
                        lefts.append(out[-1])
    for topic in (lt, rt):
        for partition, key in CLOSERS.items():
            add(topic, key, {"id": f"{topic[:2]}#close{partition}", "n": 1, "k2": key}, 200_000)
    return out


Place = tuple[str, int, int]
"""topic, partition, offset"""


def place(record: Piped) -> Place:
    return record.topic, record.partition, record.offset


def batches(records: Iterable[Piped]) -> dict[Place, int]:
    """The micro-batch each record is read in (Python source, PER_BATCH records a batch)."""
    by_topic: dict[str, list[Piped]] = {}
    for record in records:
        by_topic.setdefault(record.topic, []).append(record)
    found: dict[Place, int] = {}
    for topic, piped in by_topic.items():
        counts = Counter(r.partition for r in piped)
        available = [OffsetRange(topic, p, 0, n) for p, n in sorted(counts.items())]
        starts: StreamOffsets = {}
        batch = 0
        while True:
            ends = bounded_ends(starts, available, PER_BATCH)
            if ends == starts:
                break
            for r in piped:
                begin = starts.get(topic, {}).get(str(r.partition), 0)
                if begin <= r.offset < ends[topic][str(r.partition)]:
                    found[place(r)] = batch
            starts, batch = ends, batch + 1
    return found


def pipe_order(records: list[Piped], batch_of: dict[Place, int]) -> list[Piped]:
    """The records micro-batch by micro-batch, each in the order `streamjoin.spark.order`
    assumes (offset order in each partition): the order `TestDriver` gets them in."""
    ranks = {t: n for n, t in enumerate(dict.fromkeys(r.topic for r in records))}
    ordered: list[Piped] = []
    for batch in range(max(batch_of.values()) + 1):
        these: dict[str, list[Piped]] = {}
        for r in records:
            if batch_of[place(r)] == batch:
                these.setdefault(r.topic, []).append(r)
        ordered += processing_order(these, ranks)
    return ordered


@dataclass(frozen=True, slots=True)
class Row:
    """A record as a join's input has it: after its steps, keyed and partitioned for the join."""

    key: str | None
    partition: int
    t: int
    id: str
    source: str
    batch: int
    at: int
    """its place in the order `TestDriver` gets the records in"""


def _rows(records: Iterable[Piped], stepped: Callable[[Piped], Row | None]) -> list[Row]:
    return [row for r in records if r.value is not None if (row := stepped(r)) is not None]


def case_rows(
    case: WindowedCase, app: App, piped: list[Piped], batch_of: dict[Place, int]
) -> tuple[list[Row], list[Row]]:
    """The left and right rows of `case`'s join, in the order piped."""
    spec = app.get_join(case.how)
    sources = {r.topic.name: r.source.name for r in app.repartitions}
    order = {place(r): n for n, r in enumerate(piped)}

    def row(r: Piped, key: str | None, partition: int, source: str) -> Row:
        assert r.value is not None
        at = order[place(r)]
        return Row(key, partition, r.timestamp, r.value["id"], source, batch_of[place(r)], at)

    def plain(r: Piped) -> Row:
        return row(r, r.key, r.partition, f"{r.topic}:{r.partition}:{r.offset}")

    def left_row(r: Piped) -> Row | None:
        assert r.value is not None
        return plain(r) if not case.steps or _kept_left(r.value) else None

    def right_row(r: Piped) -> Row | None:
        assert r.value is not None
        if not case.steps:
            return plain(r)
        if not _kept_right(r.value):
            return None
        key = r.value["k2"]
        partition = 0 if key is None else partition_for_key(key.encode(), PARTITIONS)
        return row(r, key, partition, f"{spec.right.name}:{partition}")

    lhs = [r for r in piped if r.topic == sources.get(spec.left.name, spec.left.name)]
    rhs = [r for r in piped if r.topic == sources.get(spec.right.name, spec.right.name)]
    # Keyless rows reach the join only on a side whose non-matches are emitted.
    left_keyless, right_keyless = case.how != "inner", case.how == "outer"
    return (
        [row for row in _rows(lhs, left_row) if left_keyless or row.key is not None],
        [row for row in _rows(rhs, right_row) if right_keyless or row.key is not None],
    )


def watermarks(case: WindowedCase, sides: tuple[list[Row], list[Row]]) -> list[int]:
    """W(k) of every micro-batch k."""
    last = max(row.batch for rows in sides for row in rows)
    found: list[int] = []
    current = 0
    largest: list[int | None] = [None, None]
    for batch in range(last + 1):
        found.append(current)
        for n, rows in enumerate(sides):
            times = [row.t for row in rows if row.batch == batch]
            if times:
                largest[n] = max(largest[n] or 0, *times)
        bounds = [t - d for t, d in zip(largest, case.delays, strict=True) if t is not None]
        if bounds:
            current = max(current, min(bounds))
    return found


def _output(key: str | None, lrow: Row | None, rrow: Row | None) -> Output:
    value = {"l": None if lrow is None else lrow.id, "r": None if rrow is None else rrow.id}
    t = max(row.t for row in (lrow, rrow) if row is not None)
    lsource = None if lrow is None else lrow.source
    rsource = None if rrow is None else rrow.source
    return (key, json.dumps(value, sort_keys=True), t, lsource, rsource)


@dataclass(frozen=True, slots=True)
class Expected:
    outputs: Counter[Output]
    dropped: frozenset[Row]
    """the rows Spark drops as late"""
    watermarks: tuple[int, ...]


def spark_expected(case: WindowedCase, sides: tuple[list[Row], list[Row]]) -> Expected:
    """Spark's results for `case` on these rows, by the rules in the module docstring."""
    marks = watermarks(case, sides)
    kept = tuple([row for row in rows if row.t > marks[row.batch]] for rows in sides)
    dropped = frozenset(row for rows in sides for row in rows if row.t <= marks[row.batch])
    before, after = case.window.before_ms, case.window.after_ms
    outputs: Counter[Output] = Counter()
    matched: set[Row] = set()
    for lrow in kept[0]:
        for rrow in kept[1]:
            if (
                lrow.key is not None
                and lrow.key == rrow.key
                and lrow.partition == rrow.partition
                and lrow.t - before <= rrow.t <= lrow.t + after
            ):
                outputs[_output(lrow.key, lrow, rrow)] += 1
                matched |= {lrow, rrow}
    outer = {"inner": (), "left": (0,), "outer": (0, 1)}[case.how]
    for side in outer:
        for row in kept[side]:
            if row not in matched:
                pair = (row, None) if side == 0 else (None, row)
                outputs[_output(row.key, *pair)] += 1
    return Expected(outputs, dropped, tuple(marks))


def _ids(out: Output) -> tuple[str | None, str | None]:
    value = json.loads(out[1])
    return value["l"], value["r"]


def _store_dropped(case: WindowedCase, sides: tuple[list[Row], list[Row]], a: Row, b: Row) -> bool:
    """Whether the workers' store of the earlier of `a` and `b` (in the order piped) no longer
    kept it when the later came: its time at or below that store's stream time in their
    partition (its largest keyed time so far) - (before + after + grace)."""
    first, later = sorted((a, b), key=lambda row: row.at)
    own = sides[0] if first in sides[0] else sides[1]
    stream_time = max(
        row.t
        for row in own
        if row.key is not None and row.partition == first.partition and row.at < later.at
    )
    w = case.window
    return first.t <= stream_time - (w.before_ms + w.after_ms + w.grace_ms)


def unexplained(
    case: WindowedCase,
    sides: tuple[list[Row], list[Row]],
    spark: Expected,
    driver: Counter[Output],
) -> list[str]:
    """Differences between the workers' records (`driver`) and Spark's that neither of these
    explains (none when the two engines differ only as they must):

    - a row Spark dropped as late: the workers' outputs with it (its pairs, its non-match) are
      not Spark's, and a partner left without a pair is a non-match in Spark's;
    - a pair the workers could not make, as the earlier record's store no longer kept it when
      the later came (`_store_dropped`): Spark's pair, and the workers' non-match of either.
    """
    rows = {row.id: row for side in sides for row in side}
    late = {row.id for row in spark.dropped}
    found: list[str] = []
    missed: set[str] = set()
    for out in (spark.outputs - driver).elements():
        lid, rid = _ids(out)
        if lid is not None and rid is not None:
            if _store_dropped(case, sides, rows[lid], rows[rid]):
                missed |= {lid, rid}
            else:
                found.append(f"Spark only, unexplained pair: {out}")
            continue
        alone = lid or rid
        if not any(alone in _ids(o) and set(_ids(o)) & late for o in driver):
            found.append(f"Spark only, a non-match with no late partner at the workers: {out}")
    for out in (driver - spark.outputs).elements():
        ids = set(_ids(out)) - {None}
        if ids & late:
            continue
        if len(ids) == 1 and ids & missed:
            continue
        found.append(f"workers only, unexplained: {out}")
    return found
