"""One SparkSession for the whole test run (starting one costs 7-12 s); each test gets its own
`newSession()` of it. Spark tests are skipped only when there is no Java to run Spark on."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    reason = java_missing()
    if reason is not None:
        pytest.skip(f"Spark tests skipped: {reason}")
    with open_session("local[2]", app_name="streamjoin-tests") as session:
        yield session


@pytest.fixture
def spark(spark_session: SparkSession) -> SparkSession:
    return spark_session.newSession()


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
def small_spark(spark_session: SparkSession) -> SparkSession:
    """A session of its own for batch jobs over little data (SMALL_DATA)."""
    session = spark_session.newSession()
    for key, value in SMALL_DATA.items():
        session.conf.set(key, value)
    return session


@pytest.fixture(scope="session")
async def worker_run(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> object:
    """The shared join cases through one worker process on the broker, for the engine
    comparison and for audits of what it wrote."""
    from engines import run_worker

    suffix = uuid.uuid4().hex[:10]
    return await run_worker(broker.bootstrap, suffix, tmp_path_factory.mktemp("worker"))
