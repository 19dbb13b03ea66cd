"""The shared join cases through `spark-stream`'s query (AvailableNow): the whole table (field
mappings) from Spark's Kafka connector in a session of its own, and the cases that take the
Python source's own paths (null keys, an outer join's non-matches, the late case, bounded
micro-batches) from streamjoin's Python source on the test session: the same rows as the test
driver (and so the worker), except where Spark's watermark differs. The join and joiner are the
same compiler whatever the source, so the Python source needs no more than its own cases (each
of its queries starts Python processes that must connect back to Spark within a fixed 10 s).
Function joiners would produce to their output topics (as --into-topic): test_spark_stream_cli
runs one so; field mappings write Parquet (as --output).

Spark advances its watermark between micro-batches, so records that arrive in one micro-batch
are never late to each other: with every case in one batch, the "late" case joins every pair in
its window, which is what the workers do there too (r-late finds l1 still in its store).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from engines import Results, cases_in_topics, run_driver, run_spark_stream
from join_cases import CASES, build_app, join_name
from pyspark.sql import SparkSession

from streamjoin.broker import Broker

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent


def _expected(suffix: str) -> dict[str, Results]:
    """The driver's results (the worker's)."""
    return run_driver(build_app(suffix), suffix)


def _check(
    found: dict[str, Results],
    expected: dict[str, Results],
    joiners: Iterable[str],
    cases: Iterable[str] | None = None,
) -> None:
    assert CASES[5].name == "late"
    chosen = {case.name for case in CASES} if cases is None else set(cases)
    assert chosen <= {case.name for case in CASES}
    for case in CASES:
        for joiner in joiners:
            name = join_name(case, joiner)
            if case.name in chosen:
                assert found.get(name, Counter()) == expected[name], name
            else:
                assert name not in found, name


_PYTHON_SOURCE_CASES = ("null-keys", "outer", "late")


def test_cases_through_the_python_source(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    """The source's own paths in one micro-batch a query, then in micro-batches of one record
    a topic ("bounds": its right records before, at, and past the window's edges)."""
    suffix = f"ss{uuid.uuid4().hex[:8]}"
    asyncio.run(cases_in_topics(broker.bootstrap, suffix))
    run = (spark, broker.bootstrap, suffix)
    found = run_spark_stream(
        *run, tmp_path / "whole", official=False, joiners=["map"], cases=_PYTHON_SOURCE_CASES
    )
    bounded = run_spark_stream(
        *run,
        tmp_path / "bounded",
        official=False,
        joiners=["map"],
        cases=["bounds"],
        max_records_per_batch=1,
    )
    expected = _expected(suffix)
    _check(found, expected, ["map"], _PYTHON_SOURCE_CASES)
    _check(bounded, expected, ["map"], ["bounds"])
    late = found[join_name(CASES[5], "map")]
    assert {(r[2], r[3]) for r in late} >= {("l1", "r-late"), ("l-late", None)}


_CONNECTOR_RUN = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from engines import run_spark_stream
from streamjoin.spark.connector import session_settings
from streamjoin.spark.session import spark_session
with spark_session("local[2]", session_settings("local[2]")) as spark:
    found = run_spark_stream(
        spark, sys.argv[2], sys.argv[3], Path(sys.argv[4]), official=True, joiners=["map"],
        parallel=2,
    )
print(json.dumps({name: [[row, n] for row, n in c.items()] for name, c in found.items()}))
"""


def test_cases_through_sparks_kafka_connector(
    spark: SparkSession, broker: Broker, tmp_path: Path
) -> None:
    """Every case, two queries at a time (no Python process to start: field mappings, to
    Parquet), in a process of its own: its session has the connector's jars, the test session
    not. The function joiners' path (a Python joiner, --into-topic) is the same whatever the
    source: test_spark_stream_cli runs it through the connector."""
    suffix = f"sk{uuid.uuid4().hex[:8]}"
    asyncio.run(cases_in_topics(broker.bootstrap, suffix))
    run = [str(HERE), broker.bootstrap, suffix, str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-c", _CONNECTOR_RUN, *run], capture_output=True, text=True, timeout=540
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    found = {name: Counter({tuple(row): n for row, n in rows}) for name, rows in printed.items()}
    _check(found, _expected(suffix), ["map"])
