"""`spark-stream`'s stream-static joins (streamjoin/spark/stream_static.py) on small data: a
left stream-table join on a plain table and an inner global-table join, every stream record
after its key's last update, give `TestDriver`'s records (keys, values, timestamps, sources),
on fixed records and, in the same topics and queries, random ones (other keys);
a record older than its key's last update stops the query in one line, and so does a table that
changed while the query ran. The queries read through streamjoin's Python source on the test
session, one at a time."""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path

import pytest
from json_records import Record, driver_outputs, parquet_outputs, produce
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from scenarios import IDS

from streamjoin import App
from streamjoin.broker import Broker
from streamjoin.dsl.spec import JoinSpec
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.spark.kafka.offsets import plan_ranges
from streamjoin.spark.stream_static import TableSnapshot
from streamjoin.spark.streaming import StreamSource, StreamTarget, Trigger, start_stream

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(600)]

PARTITIONS = 2


def _app(s: str) -> App:
    app = App(f"static-{s}")
    orders = app.topic(f"orders-{s}", partitions=PARTITIONS)
    users = app.table(f"users-{s}", partitions=PARTITIONS)
    countries = app.global_table(f"countries-{s}", partitions=1)
    app.join(orders, users, how="left", into=f"named-{s}", name="named")(IDS)
    app.join(orders, countries, key=lambda v: v["g"], into=f"placed-{s}", name="placed")(IDS)
    return app


def _records(s: str) -> list[Record]:
    """The tables' updates (repeated keys, tombstones), then the orders, all later: keys with a
    value, a tombstone, none, and no key at all."""
    users, countries, orders = f"users-{s}", f"countries-{s}", f"orders-{s}"
    updates: list[Record] = [(users, f"u{i}", {"id": f"user{i}"}, 1_000 + i) for i in range(5)]
    updates += [(users, "u1", {"id": "user1-renamed"}, 1_100), (users, "u3", None, 1_200)]
    updates += [(countries, c, {"id": c.upper()}, 2_000 + n) for n, c in enumerate(("de", "fr"))]
    updates += [(countries, "fr", {"id": "FR2"}, 2_100), (countries, "us", {"id": "US"}, 2_200)]
    updates += [(countries, "us", None, 2_300)]
    keys = ["u0", "u1", "u2", "u3", "u4", "u5", None]
    countries_of = ["de", "fr", "us", "nl"]
    stream = [
        (orders, keys[i % len(keys)], {"id": f"o{i}", "g": countries_of[i % 4]}, 10_000 + 10 * i)
        for i in range(21)
    ]
    return updates + stream


def _random_records(seed: int, s: str) -> list[Record]:
    """More updates and stream records (other keys), every stream record later than every
    update (the condition for a stream-static join to be exact), in any time order: keys with a
    value, a tombstone, none, and no key; places found, deleted, absent, not given."""
    rng = random.Random(seed)
    users, countries, orders = f"users-{s}", f"countries-{s}", f"orders-{s}"
    keys = [f"k{n}" for n in range(4)]
    out: list[Record] = []
    for n in range(12):
        value = None if rng.random() < 0.25 else {"id": f"ku{n}"}
        out.append((users, rng.choice(keys[:3]), value, 1_000 + rng.randrange(300)))
    for n in range(6):
        value = None if rng.random() < 0.25 else {"id": f"place{n}"}
        out.append((countries, rng.choice("xyz"), value, 2_000 + rng.randrange(300)))
    out.sort(key=lambda r: r[3])
    for n in range(24):
        value = {"id": f"s{n}", "g": rng.choice(["x", "y", "z", "w", None])}
        out.append((orders, rng.choice([*keys, None]), value, 10_000 + rng.randrange(200)))
    return out


def _partition(record: Record) -> int:
    topic, key, _, _ = record
    if key is None or topic.startswith("countries"):
        return 0
    return partition_for_key(key.encode(), PARTITIONS)


def _stream(
    spark: SparkSession, app: App, spec: JoinSpec, bootstrap: str, tmp: Path
) -> StreamingQueryException | None:
    """The query of `spec` over what is in the topics (AvailableNow); its failure, if any."""
    target = StreamTarget(str(tmp / f"{spec.name}.checkpoint"), str(tmp / spec.name))
    source = StreamSource(bootstrap, official=False)
    query = start_stream(spark, app, spec, source, target, Trigger(available_now=True))
    try:
        query.awaitTermination()
    except StreamingQueryException as failure:
        return failure
    return None


def test_stream_static_joins_equal_the_test_driver_or_stop_in_one_line(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    s = uuid.uuid4().hex[:8]
    app, records = _app(s), _records(s) + _random_records(1, s)
    topics = {t.name: t.partitions or 1 for spec in app.joins for t in (spec.left, spec.right)}
    asyncio.run(ensure_topics(broker.bootstrap, [TopicSpec(t, n) for t, n in topics.items()]))
    asyncio.run(produce(broker.bootstrap, records, _partition))
    expected = driver_outputs(app, records, _partition)
    fixed = {n: sum(1 for o in expected[n].elements() if '"l": "o' in o[1]) for n in expected}
    assert fixed == {"named": 21, "placed": 9}
    for spec in app.joins:
        assert _stream(spark, app, spec, broker.bootstrap, tmp_path) is None
        found = parquet_outputs(spark, str(tmp_path / spec.name))
        assert found == expected[spec.name], spec.name

    # A snapshot of the users table, then an update: the query's next micro-batch would stop.
    users = f"users-{s}"
    snapshot = TableSnapshot(broker.bootstrap, tuple(plan_ranges(broker.bootstrap, [users])))
    snapshot.check()
    # An order older than its user's last update (u1 at 1,100): the next run stops on it.
    asyncio.run(
        produce(
            broker.bootstrap, [(f"orders-{s}", "u1", {"id": "old", "g": "de"}, 1_050)], _partition
        )
    )
    failure = _stream(spark, app, app.joins[0], broker.bootstrap, tmp_path)
    assert failure is not None
    assert (
        "join 'named': a record at 1050 is not later than the latest update of its key in "
        f"table 'users-{s}' (at 1100)" in str(failure)
    )
    asyncio.run(produce(broker.bootstrap, [(users, "u9", {"id": "user9"}, 3_000)], _partition))
    with pytest.raises(
        ConfigurationError,
        match=f"table 'users-{s}' changed since the query started \\(1 new records in partition",
    ):
        snapshot.check()
