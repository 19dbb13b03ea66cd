"""`ship` without Spark: a function of the user's module, with a dataclass that msgspec has
cached its type info on, loads and runs in an interpreter that cannot import the module, and
the driver's class keeps its cache."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from pyspark import cloudpickle

from streamjoin.spark.shipping import ship

MODULE = """
from dataclasses import dataclass

import pyarrow as pa

from streamjoin.dsl.serdes import serde_for


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    n: int


SERDE = serde_for(Point)


def doubled(batches):
    for batch in batches:
        points = [SERDE.deserialize(value) for value in batch.column("value").to_pylist()]
        yield pa.record_batch({"n": [2 * point.n for point in points]})
"""

LOAD_AND_RUN = """
import pickle, sys
import pyarrow as pa
function = pickle.loads(sys.stdin.buffer.read())
batch = pa.record_batch({"value": [b'{"name":"a","n":1}', b'{"name":"b","n":20}']})
print([b.column("n").to_pylist() for b in function(iter([batch]))])
"""


def test_a_dataclass_cached_by_msgspec_ships_by_value_and_keeps_its_cache(
    tmp_path: Path,
) -> None:
    (tmp_path / "shipped_module.py").write_text(MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("shipped_module")
    finally:
        sys.path.remove(str(tmp_path))
    assert module.SERDE.deserialize(b'{"name":"a","n":1}') == module.Point("a", 1)
    cache = vars(module.Point)["__msgspec_cache__"]

    shipped = ship(module.doubled, "the test's function", [module.doubled, module.Point])
    assert vars(module.Point)["__msgspec_cache__"] is cache

    done = subprocess.run(
        [sys.executable, "-c", LOAD_AND_RUN],
        input=cloudpickle.dumps(shipped),
        capture_output=True,
        cwd=tmp_path.parent,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "[[2, 40]]"
