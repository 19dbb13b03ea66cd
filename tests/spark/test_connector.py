"""Spark's Kafka connector for spark-stream: what a session is handed, and the one line a
machine without Maven gets (nothing is fetched but through Maven, once)."""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

from streamjoin.errors import ConfigurationError
from streamjoin.spark import connector


def test_without_maven_the_fetch_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigurationError) as refused:
        connector.connector_jars()
    message = str(refused.value)
    assert "needs Maven once" in message
    assert "--kafka-source python" in message
    assert not any(tmp_path.rglob("*.jar"))


def test_a_cluster_resolves_the_package_a_local_session_gets_jars(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    coordinate = connector.connector_coordinate()
    assert coordinate == (
        f"org.apache.spark:spark-sql-kafka-0-10_{connector.scala_binary()}:{pyspark.__version__}"
    )
    assert connector.session_settings("spark://master:7077") == {"spark.jars.packages": coordinate}
    cached = (
        tmp_path / "streamjoin" / f"spark-kafka-{pyspark.__version__}_{connector.scala_binary()}"
    )
    cached.mkdir(parents=True)
    for name in ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar", ".complete"):
        (cached / name).write_text("")
    jars = [f"{cached}/kafka-clients-3.9.2.jar", f"{cached}/spark-sql-kafka-0-10_2.13-4.2.0.jar"]
    assert connector.session_settings("local[2]") == {"spark.jars": ",".join(jars)}
    assert connector.session_settings("spark://master:7077") == {
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
    }
