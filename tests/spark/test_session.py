"""A session made by `spark_session` stops without Spark's state-store maintenance thread
printing a Java stack trace ("SparkEnv not active") after a streaming query: the thread runs
every 5 ms here, so without the stores unloaded first it nearly always races the stop. Its own
process: the suite's shared session must not be stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """
import json, sys
from pathlib import Path
from streamjoin.spark.session import spark_session

work = Path(sys.argv[1])
(work / "in").mkdir()
rows = (json.dumps({"k": i % 10}) for i in range(100))
(work / "in" / "rows.json").write_text("\\n".join(rows))
conf = {"spark.sql.streaming.stateStore.maintenanceInterval": "5ms", "spark.log.level": "WARN"}
with spark_session("local[1]", conf) as spark:
    counts = spark.readStream.schema("k INT").json(str(work / "in")).groupBy("k").count()
    query = (
        counts.writeStream.outputMode("complete").format("memory").queryName("counts")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination()
    print(spark.table("counts").count())
"""


def test_stopping_after_a_streaming_query_prints_no_java_trace(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "10"
    assert "SparkEnv not active" not in done.stderr, done.stderr
    assert "\tat org.apache" not in done.stderr, done.stderr
