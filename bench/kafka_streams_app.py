"""The Kafka Streams 4.4.0 contender of bench/vs_kafka_streams.py: bench/java/AdsJoinStreams.java
(apps/ads/app.py's join on Kafka Streams), built by Maven (bench/java/pom.xml) into a jar and its
dependencies in ~/.cache/streamjoin/ads-join-streams-VERSION/ by `make kafka-streams-app` (this
file's `main`), and the command line that runs it. The bench only runs what that step built.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from streamjoin.broker.kafka_jars import find_java, kafka_jars_dir, kafka_version
from streamjoin.maven_jars import cache_dir, is_complete

__all__ = ("app_classpath", "build", "streams_command")

JAVA = Path(__file__).resolve().parent / "java"
SOURCES = (JAVA / "AdsJoinStreams.java", JAVA / "pom.xml")

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


def _built() -> Path:
    return cache_dir(f"ads-join-streams-{kafka_version()}")


def _jar() -> Path:
    return _built() / "ads-join-streams-1.jar"


def build() -> None:
    """`mvn package` of bench/java/pom.xml against the broker's Kafka release (Maven fetches
    what it lacks from Maven Central, once), and the app's log configuration beside it."""
    mvn = shutil.which("mvn")
    if mvn is None:
        sys.exit("building the Kafka Streams contender needs Maven: apt-get install maven")
    out = _built()
    pom, version = str(JAVA / "pom.xml"), kafka_version()
    done = subprocess.run(
        [mvn, "-B", "-q", "-f", pom, f"-Dbuild.out={out}", f"-Dkafka.version={version}", "package"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        errors = [line for line in done.stdout.splitlines() if "[ERROR]" in line]
        sys.exit(f"Maven could not build {JAVA / 'pom.xml'}: {' | '.join(errors[:3])}")
    (out / "conf").mkdir(exist_ok=True)
    (out / "conf" / "log4j2.properties").write_text(LOG4J)
    print(f"Kafka Streams {kafka_version()} ads join built: {_jar()}")


def app_classpath() -> str:
    """The built app's classpath (its jar, its dependencies, the broker's log4j jars for its log,
    its log configuration last); exits with the make step to run when it is missing or older
    than its sources."""
    jar, broker_jars = _jar(), kafka_jars_dir()
    if not is_complete(broker_jars):
        sys.exit(f"Kafka {kafka_version()}'s jars are not in {broker_jars}: run make kafka-jars")
    if not jar.is_file() or jar.stat().st_mtime < max(s.stat().st_mtime for s in SOURCES):
        sys.exit(
            f"the Kafka Streams contender is not built (or older than {JAVA}): run "
            "make kafka-streams-app"
        )
    logging = ":".join(str(path) for path in sorted(broker_jars.glob("log4j-*.jar")))
    return f"{jar}:{_built()}/lib/*:{logging}:{_built()}/conf"


def streams_command(
    classpath: str, prefix: str, bootstrap: str, state: Path, *extra: str
) -> list[str]:
    """Run the app on `prefix`'s topics (ads_join.topic_names), application id `prefix`."""
    conf = classpath.rsplit(":", 1)[1]
    return [
        find_java(),
        f"-Dlog4j2.configurationFile={conf}/log4j2.properties",
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


if __name__ == "__main__":
    build()
