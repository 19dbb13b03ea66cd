"""One SparkSession for the whole test run (starting one costs 7-12 s); each test gets its own
`newSession()` of it. Spark tests are skipped only when there is no Java to run Spark on."""

from __future__ import annotations

import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from streamjoin.broker import Broker
from streamjoin.spark.availability import java_missing
from streamjoin.spark.session import spark_session as open_session

HERE = Path(__file__).resolve().parent
# The shared case table is imported by these tests and, as `join_cases:app`, by the worker.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


TEST_SESSION = {"spark.driver.memory": "2g"}
"""Twice the local default: one JVM serves every Spark test of an xdist worker for the whole run,
and the jobs computing every join kind at once hold 540-680 MB live at their peak (a heap
histogram). A CI run lost its JVM in one of them (a Java error, then the JVM gone: the rest of
that worker's Spark tests could not connect); no run here reproduced it, down to a 480 MB heap."""


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    reason = java_missing()
    if reason is not None:
        pytest.skip(f"Spark tests skipped: {reason}")
    with open_session("local[2]", TEST_SESSION, app_name="streamjoin-tests") as session:
        yield session


@pytest.fixture
def spark(spark_session: SparkSession) -> Iterator[SparkSession]:
    _jvm_still_running(spark_session)
    yield spark_session.newSession()
    _jvm_still_running(spark_session)


_SPARK_EXITS = {50: "an uncaught exception", 51: "uncaught exceptions", 52: "OutOfMemoryError"}


def _jvm_still_running(session: SparkSession) -> None:
    """Fail in one line naming how the shared JVM ended (Spark's exit codes; a signal), rather
    than with every later test's connection refused."""
    process = getattr(session.sparkContext._gateway, "proc", None)
    status = None if process is None else process.poll()
    if status is None:
        return
    how = signal.Signals(-status).name if status < 0 else _SPARK_EXITS.get(status, "?")
    pytest.fail(f"Spark's JVM has exited, status {status} ({how})", pytrace=False)


SMALL_DATA = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""For batch jobs over a few hundred records, where Spark's planning and code generation cost
more than the data: one shuffle partition, no adaptive re-planning, no generated code (a third
less JVM CPU on the join scenarios)."""


@pytest.fixture
def small_spark(spark_session: SparkSession) -> Iterator[SparkSession]:
    """A session of its own for batch jobs over little data (SMALL_DATA)."""
    _jvm_still_running(spark_session)
    session = spark_session.newSession()
    for key, value in SMALL_DATA.items():
        session.conf.set(key, value)
    yield session
    _jvm_still_running(spark_session)


@pytest.fixture(scope="session")
async def worker_run(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> object:
    """The shared join cases through one worker process on the broker, for the engine
    comparison and for audits of what it wrote."""
    from engines import run_worker

    suffix = uuid.uuid4().hex[:10]
    return await run_worker(broker.bootstrap, suffix, tmp_path_factory.mktemp("worker"))
