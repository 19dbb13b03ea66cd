"""User code on Spark's Python workers: an app module that only the driver can import, with a
join for every value type the workers accept, runs after its serdes were built and used (msgspec
then caches its type info, which cannot be pickled, on the dataclasses); a joiner that cannot be
pickled is one line naming the join."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from streamjoin.cli import app as cli
from streamjoin.dsl.app import App
from streamjoin.dsl.loading import load_app
from streamjoin.spark.backfill import backfill
from streamjoin.spark.inputs import Sources
from streamjoin.spark.records import RECORD_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

APP = """
import threading
from dataclasses import dataclass

import faust

from streamjoin import App, JoinWindows

app = App("shipping")
window = JoinWindows.of(100)


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    n: int


class Item(faust.Record, serializer="json"):
    name: str
    n: int


def declare(kind, value_type, joiner):
    sides = [app.topic(f"{kind}-{side}", value_type=value_type) for side in ("l", "r")]
    into = app.topic(f"{kind}-out", value_type=value_type)
    app.join(*sides, window=window, into=into, name=kind)(joiner)


declare("dataclass", Point, lambda l, r: Point(l.name + r.name, l.n + r.n))
declare("faust", Item, lambda l, r: Item(name=l.name + r.name, n=l.n + r.n))
declare("dict", dict, lambda l, r: {"name": l["name"] + r["name"], "n": l["n"] + r["n"]})
declare("str", str, lambda l, r: l + r)
declare("bytes", bytes, lambda l, r: l + r)

lock = threading.Lock()


def locked(l, r):
    with lock:
        return l + r


declare("locked", str, locked)
"""


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The app in a directory that only the driver has on its import path."""
    directory = tmp_path_factory.mktemp("shipping")
    (directory / "shipping_app.py").write_text(APP)
    yield directory


@pytest.fixture(scope="module")
def shipping_app(app_dir: Path) -> App:
    return load_app("shipping_app:app", app_dir)


def _values(kind: str) -> tuple[Any, Any, Any]:
    """(left, right, expected joiner result) of `kind`'s join, as values of its type."""
    module = importlib.import_module("shipping_app")
    point, item = module.Point, module.Item
    return {
        "dataclass": (point("a", 1), point("b", 2), point("ab", 3)),
        "faust": (item(name="a", n=1), item(name="b", n=2), item(name="ab", n=3)),
        "dict": ({"name": "a", "n": 1}, {"name": "b", "n": 2}, {"name": "ab", "n": 3}),
        "str": ("a", "b", "ab"),
        "bytes": (b"a", b"b", b"ab"),
    }[kind]


def _archive(spark: SparkSession, path: Path, topic: str, value: bytes) -> str:
    row = (b"k", value, topic, 0, 0, 1_000, [])
    spark.createDataFrame([row], RECORD_SCHEMA).write.parquet(str(path))
    return str(path)


@pytest.mark.parametrize("kind", ["dataclass", "faust", "dict", "str", "bytes"])
def test_every_value_type_joins_on_spark_after_its_serde_was_used(
    spark: SparkSession, shipping_app: App, tmp_path: Path, kind: str
) -> None:
    spec = shipping_app.get_join(kind)
    left, right, expected = _values(kind)
    archives = {}
    for side, value in ((spec.left, left), (spec.right, right)):
        encoded = side.value_serde.serialize(value)
        assert side.value_serde.deserialize(encoded) == value  # the serde built and used
        archives[side.name] = _archive(spark, tmp_path / side.name, side.name, encoded)
    if kind == "dataclass":
        assert "__msgspec_cache__" in vars(type(left))  # what could not be pickled
    job = backfill(spark, shipping_app, [spec], Sources(None, archives))
    rows = job.records(spec).collect()
    assert len(rows) == 1
    assert spec.into.value_serde.deserialize(rows[0]["value"]) == expected


def test_a_joiner_that_cannot_be_pickled_is_one_line_naming_the_join(
    spark: SparkSession, shipping_app: App, app_dir: Path, tmp_path: Path
) -> None:
    spec = shipping_app.get_join("locked")
    archives = []
    for side in (spec.left, spec.right):
        path = _archive(spark, tmp_path / side.name, side.name, b"x")
        archives += ["--archive", f"{side.name}={path}"]
    command = ["backfill", "shipping_app:app", "--app-dir", str(app_dir), "--join", "locked"]
    result = CliRunner().invoke(cli, [*command, *archives, "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert "joiner of join 'locked' cannot be sent to Spark's Python workers" in message
    assert "_thread.lock" in message
