"""The Kafka Streams 4.4.0 contender of bench/vs_kafka_streams.py: bench/java/AdsJoinStreams.java
(apps/ads/app.py's join on Kafka Streams) compiled with javac against the jars that
`make kafka-streams-jars` fetched with Maven from Maven Central into ~/.cache/streamjoin/, and
the command line that runs it. Nothing is downloaded here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from streamjoin.broker.kafka_jars import find_java, kafka_version
from streamjoin.maven_jars import cache_dir, is_complete

__all__ = ("compile_app", "streams_command")

SOURCE = Path(__file__).resolve().parent / "java" / "AdsJoinStreams.java"

LOG4J = """\
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d %p %c{1} %m%n
logger.streams.name = org.apache.kafka.streams
logger.streams.level = INFO
"""
"""Its log like the worker's: warnings, and Kafka Streams' own account of what it does."""


def compile_app(out: Path) -> str:
    """Compile the app into `out`; returns its classpath (Kafka Streams' jars, the broker's
    log4j jars for its log, its classes)."""
    jars = cache_dir(f"kafka-streams-{kafka_version()}")
    broker_jars = cache_dir(f"kafka-{kafka_version()}")
    if not is_complete(jars) or not is_complete(broker_jars):
        sys.exit(
            f"Kafka Streams {kafka_version()}'s jars are not in {jars}: run make kafka-jars "
            "kafka-streams-jars"
        )
    javac = shutil.which("javac")
    if javac is None:
        sys.exit("the Kafka Streams contender needs a JDK 17+ (javac)")
    subprocess.run(
        [javac, "-d", str(out), "-cp", f"{jars}/*", str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (out / "log4j2.properties").write_text(LOG4J)
    logging = ":".join(str(jar) for jar in sorted(broker_jars.glob("log4j-*.jar")))
    return f"{jars}/*:{logging}:{out}"


def streams_command(
    classpath: str, prefix: str, bootstrap: str, state: Path, *extra: str
) -> list[str]:
    """Run the app on `prefix`'s topics (ads_join.topic_names), application id `prefix`."""
    classes = classpath.rsplit(":", 1)[1]
    return [
        find_java(),
        f"-Dlog4j2.configurationFile={classes}/log4j2.properties",
        "-cp",
        classpath,
        "AdsJoinStreams",
        "--bootstrap",
        bootstrap,
        "--prefix",
        prefix,
        "--state-dir",
        str(state),
        *extra,
    ]
