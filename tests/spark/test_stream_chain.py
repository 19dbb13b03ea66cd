"""Chained windowed joins in one `spark-stream` query (streamjoin/spark/compiler.py's EVENT_TIME):
payments through filter and key_by joined with orders (inner), their results with shipments
(left), and those with deliveries (inner), as the shop demo's `pay` and `ship` chain them. Fixed
records in time order (no late ones, where Spark's watermark differs from the workers) sit at
the edges the exact window decides: a shipment after its order but before its payment, one at
the paid time + `after`, one past it but within the anchor's widened range; a delivery within
that range but outside the exact window. Random ones (other keys, in the same topics and query)
sit at and around every window's edges, a little out of order (less than either engine calls
late). Spark's records equal `TestDriver`'s (keys, values, timestamps, sources), in
micro-batches of a few records each (one query; the unbounded query passed too, and costs
another). Queries read through streamjoin's Python source on the test session."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from json_records import Output, Record, driver_outputs, parquet_outputs, produce
from pyspark.sql import SparkSession

from streamjoin import App, JoinWindows
from streamjoin.broker import Broker
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.spark.streaming import StreamSource, StreamTarget, Trigger, start_stream

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(600)]

PARTITIONS = 2


def _both(left: Any, right: Any) -> dict[str, Any]:
    return {"l": left, "r": right}


def _app(s: str) -> App:
    app = App(f"chain-{s}")
    orders = app.topic(f"orders-{s}", partitions=PARTITIONS)
    payments = app.topic(f"payments-{s}", partitions=PARTITIONS)
    paid = app.topic(f"paid-{s}", partitions=PARTITIONS)
    shipped = app.topic(f"shipped-{s}", partitions=PARTITIONS)
    app.join(
        orders,
        payments.filter(lambda p: p["ok"]).key_by("order"),
        window=JoinWindows(before=0, after=100, grace=50),
        into=paid,
        name="pay",
    )(_both)
    app.join(
        paid,
        app.topic(f"shipments-{s}", partitions=PARTITIONS),
        window=JoinWindows(before=0, after=200, grace=50),
        how="left",
        into=shipped,
        name="ship",
    )(_both)
    app.join(
        shipped,
        app.topic(f"deliveries-{s}", partitions=PARTITIONS),
        window=JoinWindows(before=50, after=50, grace=0),
        into=f"delivered-{s}",
        name="deliver",
    )(_both)
    return app


def _records(s: str) -> list[Record]:
    """Per order i at t = 100,000 + 1,000 i, in time order."""
    orders, payments = f"orders-{s}", f"payments-{s}"
    shipments, deliveries = f"shipments-{s}", f"deliveries-{s}"
    out: list[Record] = []
    pays = {0: [30], 1: [10, 90], 3: [150], 4: [60], 5: [100], 6: [0]}
    ships = {0: [20, 230, 290], 1: [150], 5: [300, 301], 6: [200]}
    delivers = {0: [170, 185, 280, 281], 1: [240, 300], 5: [350]}
    for i in range(8):
        t, order = 100_000 + 1_000 * i, f"o{i}"
        out.append((orders, order, {"id": order}, t))
        for n, at in enumerate(pays.get(i, [])):
            out.append(
                (payments, f"p{i}{n}", {"id": f"p{i}{n}", "order": order, "ok": True}, t + at)
            )
        if i == 2:  # declined: filtered out before the key_by
            out.append((payments, "p20", {"id": "p20", "order": order, "ok": False}, t + 20))
        for n, at in enumerate(ships.get(i, [])):
            out.append((shipments, order, {"id": f"s{i}{n}"}, t + at))
        for n, at in enumerate(delivers.get(i, [])):
            out.append((deliveries, order, {"id": f"d{i}{n}"}, t + at))
    out.append((shipments, None, {"id": "keyless"}, 107_500))
    # Far later, a match on every level: every window before it closes, in both engines.
    close = 200_000
    out += [
        (orders, "o9", {"id": "o9"}, close),
        (payments, "p90", {"id": "p90", "order": "o9", "ok": True}, close),
        (shipments, "o9", {"id": "s90"}, close),
        (deliveries, "o9", {"id": "d90"}, close),
    ]
    return sorted(out, key=lambda r: r[3])


def _partition(record: Record) -> int:
    key = record[1]
    return 0 if key is None else partition_for_key(key.encode(), PARTITIONS)


def _derived(app: App) -> frozenset[str]:
    """Topics whose records' offsets Spark cannot know: repartition topics and join outputs."""
    return frozenset({r.topic.name for r in app.repartitions} | {s.into.name for s in app.joins})


def _stream(spark: SparkSession, app: App, bootstrap: str, out: Path) -> Counter[Output]:
    """The last join's query (the two before it in it) over what is in the topics, at most six
    records of a topic in a micro-batch: results cross micro-batches from join to join."""
    spec = app.get_join("deliver")
    target = StreamTarget(str(out / "checkpoint"), str(out / "parquet"))
    source = StreamSource(bootstrap, official=False, max_records_per_batch=6)
    query = start_stream(spark, app, spec, source, target, Trigger(available_now=True))
    query.awaitTermination()
    return parquet_outputs(spark, str(out / "parquet"), _derived(app))


def test_chained_windowed_joins_equal_the_test_driver(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    s = uuid.uuid4().hex[:8]
    app, records = _app(s), _in_production_order(_records(s), _random_records(1, s))
    sources = sorted({r[0] for r in records})
    asyncio.run(ensure_topics(broker.bootstrap, [TopicSpec(t, PARTITIONS) for t in sources]))
    asyncio.run(produce(broker.bootstrap, records, _partition))
    expected = driver_outputs(app, records, _partition, _derived(app))
    delivered = expected["deliver"]
    # The edges, as the workers decide them: o0 is paid at +30 and shipped at +230 (its
    # shipments at +20, before the payment, and at +290, past +30 + 200, are out), delivered at
    # +185 and +280 (not +170 nor +281: 50 around +230); o5 paid at +100, shipped at +300 (not
    # +301), delivered at +350; o1's two payments meet one shipment; o4's payment none.
    assert sorted((o[0], o[2]) for o in delivered.elements() if o[0].startswith("o")) == [
        ("o0", 100_230),
        ("o0", 100_280),
        ("o5", 105_350),
        ("o9", 200_000),
    ]
    shipped = expected["ship"].elements()
    assert sorted((o[0], o[2]) for o in shipped if o[0].startswith("o"))[:4] == [
        ("o0", 100_230),
        ("o1", 101_150),
        ("o1", 101_150),
        ("o4", 104_060),
    ]
    found = _stream(spark, app, broker.bootstrap, tmp_path)
    assert found == delivered, (found - delivered, delivered - found)


def _random_records(seed: int, s: str) -> list[tuple[int, Record]]:
    """Orders 1 s apart, each with random payments (some declined), shipments and deliveries at
    and around the edges of the three windows, then records far later closing every window in
    both partitions; each with the time it is produced at: its own plus up to 39 ms, so a
    record comes at most 39 ms after a later one, less than any input's watermark delay and
    than the workers' stores keep past a window: neither engine finds a record late."""
    rng = random.Random(seed)
    orders, payments = f"orders-{s}", f"payments-{s}"
    shipments, deliveries = f"shipments-{s}", f"deliveries-{s}"
    out: list[Record] = []
    for i in range(10):
        t, order = 100_000 + 1_000 * i, f"r{i}"
        out.append((orders, order, {"id": order}, t))
        paid = [rng.choice((0, 1, 50, 99, 100, 101)) for _ in range(rng.randrange(3))]
        for n, at in enumerate(paid):
            ok = rng.random() < 0.8
            value = {"id": f"p{i}{n}", "order": order, "ok": ok}
            out.append((payments, f"p{i}{n}", value, t + at))
        shipped = [
            max(paid, default=0) + rng.choice((-1, 0, 1, 100, 199, 200, 201))
            for _ in range(rng.randrange(3))
        ]
        for n, at in enumerate(shipped):
            out.append((shipments, rng.choice((order, order, None)), {"id": f"s{i}{n}"}, t + at))
        for n in range(rng.randrange(4)):
            at = rng.choice(shipped or [0]) + rng.choice((-51, -50, -49, 0, 49, 50, 51))
            out.append((deliveries, order, {"id": f"d{i}{n}"}, t + max(at, 0)))
    for key in ("c0", "c1"):  # one in each partition
        assert _partition((orders, key, None, 0)) == int(key[1])
        out += [
            (orders, key, {"id": key}, 200_000),
            (payments, f"p{key}", {"id": f"p{key}", "order": key, "ok": True}, 200_000),
            (shipments, key, {"id": f"s{key}"}, 200_000),
            (deliveries, key, {"id": f"d{key}"}, 200_000),
        ]
    return [(r[3] + rng.randrange(40), r) for r in out]


def _in_production_order(fixed: list[Record], jittered: list[tuple[int, Record]]) -> list[Record]:
    """The fixed records at their times, the random ones at theirs plus their jitter."""
    keyed = [(r[3], n, r) for n, r in enumerate(fixed)]
    keyed += [(at, len(fixed) + n, r) for n, (at, r) in enumerate(jittered)]
    return [r for *_, r in sorted(keyed)]
