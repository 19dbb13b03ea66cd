"""filter and map_values on Spark: the same results as the worker's join task (through the test
driver) on the same records, provenance included; a step that fails drops its record (the
worker dead-letters it)."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from streamjoin import App, JoinWindows
from streamjoin.spark.pipeline import JoinOptions, join_results, output_records
from streamjoin.spark.records import RECORD_SCHEMA
from streamjoin.testing import TestDriver


def tripled_even(value: dict[str, Any]) -> dict[str, Any]:
    if value["n"] == 14:
        raise ValueError("unlucky")
    return {"n": value["n"] * 3}


def build_app() -> App:
    app = App("steps")
    left, right = app.topic("L"), app.topic("R")
    evens = right.filter(lambda v: v["n"] % 2 == 0).map_values(tripled_even)
    app.join(
        left.map_values(lambda v: v["id"], value_type=str),
        evens,
        window=JoinWindows.of(10),
        how="left",
        into="out",
        name="j",
    )(lambda i, r: {"left": i, "right": r and r["n"]})
    return app


RECORDS = [  # (topic, key, value, timestamp)
    ("L", "a", {"id": "l1"}, 100),
    ("R", "a", {"n": 2}, 105),
    ("R", "a", {"n": 3}, 106),  # filtered out
    ("R", "a", {"n": 14}, 107),  # its map raises: dropped / dead-lettered
    ("L", "b", {"id": "l2"}, 200),
    ("R", "b", {"n": 4}, 300),  # outside the window: l2 is a non-match
    ("L", "c", {"id": "l3"}, 1_000),
]


def comparable(key: Any, value: bytes | dict[str, Any], ts: int, headers: dict[str, bytes]) -> Any:
    decoded = json.loads(value) if isinstance(value, bytes) else value
    return (
        key if isinstance(key, str) else key.decode(),
        json.dumps(decoded, sort_keys=True),
        ts,
        headers.get("streamjoin.left"),
        headers.get("streamjoin.right"),
    )


def test_filter_and_map_values_on_spark_equal_the_worker(spark: SparkSession) -> None:
    app = build_app()
    [spec] = app.joins
    with TestDriver(app) as driver:
        for topic, key, value, ts in RECORDS:
            driver.pipe(topic, value, key=key, timestamp=ts)
        driver.advance_stream_time(10_000)
        expected = sorted(
            comparable(r.key, r.value, r.timestamp, r.headers) for r in driver.read_output("out")
        )
        assert len(driver.dead_letters()) == 1
    offsets: dict[str, int] = {}
    rows = []
    for topic, key, value, ts in RECORDS:
        offset = offsets[topic] = offsets.get(topic, -1) + 1
        rows.append((key.encode(), json.dumps(value).encode(), topic, 0, offset, ts, []))
    inputs = spark.createDataFrame(rows, RECORD_SCHEMA)
    results = output_records(
        join_results(
            spec,
            inputs.where(inputs["topic"] == "L"),
            inputs.where(inputs["topic"] == "R"),
            JoinOptions(),
        )
    ).collect()
    got = sorted(
        comparable(
            row["key"],
            bytes(row["value"]),
            row["timestamp"],
            {h["key"]: bytes(h["value"]) for h in row["headers"] if h["value"] is not None},
        )
        for row in results
    )
    assert got == expected
    assert [json.loads(e[1]) for e in expected] == [
        {"left": "l1", "right": 6},
        {"left": "l2", "right": None},
        {"left": "l3", "right": None},
    ]
