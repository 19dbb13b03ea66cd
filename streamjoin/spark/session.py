"""A SparkSession with the settings local runs need, each overridable.

Without them a local run breaks in ways far from their cause: Python workers start the system
Python (without pyarrow) unless PYSPARK_PYTHON is this interpreter (locally, without Spark's
source copy of PySpark: worker_python.py); the driver binds to whatever
the host name resolves to unless told to use the loopback; 200 shuffle partitions make small
jobs slow. `spark.jars.packages` is not set for local runs (without Maven access the JVM dies
before a session exists): spark-stream hands Spark's Kafka connector over as cached jars
(`connector.py`) and names the package only for a cluster.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

from streamjoin.spark.worker_python import worker_python

__all__ = (
    "DEFAULT_MASTER",
    "LOCAL_DEFAULTS",
    "build_session",
    "is_local",
    "spark_session",
    "unload_state_stores",
)

logger = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"

LOCAL_DEFAULTS: Mapping[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
}
"""Applied when the master is local[...]; a cluster keeps its own settings."""


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def build_session(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, str] | None = None,
    app_name: str = "streamjoin",
) -> SparkSession:
    """Start (or join) the process's SparkSession: local defaults first, then `conf`."""
    local = is_local(master)
    os.environ.setdefault("PYSPARK_PYTHON", worker_python() if local else sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings: dict[str, str] = {"spark.sql.session.timeZone": "UTC", "spark.log.level": "WARN"}
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        scratch = tempfile.mkdtemp(prefix="streamjoin-spark-")
        settings.update(LOCAL_DEFAULTS)
        settings["spark.sql.warehouse.dir"] = os.path.join(scratch, "warehouse")
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@contextmanager
def spark_session(
    master: str = DEFAULT_MASTER,
    conf: Mapping[str, str] | None = None,
    app_name: str = "streamjoin",
) -> Iterator[SparkSession]:
    """The active session if there is one (left running), else a new one stopped on exit."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    session = build_session(master, conf, app_name)
    warehouse = session.conf.get("spark.sql.warehouse.dir", None)
    try:
        yield session
    finally:
        try:
            unload_state_stores(session)
        except Exception as exc:  # noqa: BLE001 - the JVM may answer oddly at exit: stop anyway
            logger.warning("Spark's state stores were not unloaded before the stop: %r", exc)
        finally:
            session.stop()
        scratch = os.path.dirname(warehouse.removeprefix("file:")) if warehouse else ""
        if os.path.basename(scratch).startswith("streamjoin-spark-"):
            shutil.rmtree(scratch, ignore_errors=True)


def unload_state_stores(session: SparkSession) -> None:
    """Unload the streaming queries' state stores held in the driver's JVM (every store on a
    local master) and stop their maintenance thread; the next query starts both again.

    Before a session stops: the maintenance thread (every minute) otherwise may run while it
    stops and print a Java stack trace ("SparkEnv not active, cannot do maintenance on
    StateStores"). Between queries of one session: a stopped query's stores stay loaded until
    that thread unloads them, so queries in quick succession can fill a local driver's heap."""
    jvm = session.sparkContext._jvm
    if jvm is not None:
        jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
