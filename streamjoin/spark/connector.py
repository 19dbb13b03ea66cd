"""Spark's own Kafka connector (`spark-sql-kafka-0-10`) for the installed PySpark.

Local sessions get its jars from streamjoin's cache, fetched once by Maven (`make
spark-kafka-jars`, or the first `spark-stream` that needs them, which says so) with
`maven/pom.xml`; the jars PySpark already ships are left out so that one version of each is on
the classpath. A cluster (`--master` not local) resolves the same coordinate itself through
`spark.jars.packages`, as Spark users do. When Maven Central has no connector of the installed
PySpark's exact version yet, the newest release before it that was tested is used
(`<fallback.version>` in the pom) and the fetch says so.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from streamjoin.errors import ConfigurationError
from streamjoin.maven_jars import (
    MavenFailed,
    MavenMissing,
    cache_dir,
    copy_dependencies,
    is_complete,
)
from streamjoin.spark.kafka.io import official_connector_available
from streamjoin.spark.session import is_local

__all__ = (
    "connector_coordinate",
    "connector_jars",
    "fetch_connector",
    "require_connector",
    "session_settings",
)

CONNECTOR_POM = Path(__file__).resolve().parent / "maven" / "pom.xml"
_FETCH_HINT = "make spark-kafka-jars"
_OTHER_SOURCE = "or run with --kafka-source python"


def _spark_jars() -> Path:
    return Path(pyspark.__file__).resolve().parent / "jars"


@cache
def scala_binary() -> str:
    """The Scala version PySpark's jars are built for, e.g. 2.13."""
    for jar in _spark_jars().glob("scala-library-*.jar"):
        found = re.match(r"scala-library-(\d+\.\d+)\.", jar.name)
        if found:
            return found.group(1)
    return "2.13"


def _fallback_version() -> str:
    found = re.search(r"<fallback\.version>([^<]+)<", CONNECTOR_POM.read_text())
    assert found is not None, f"{CONNECTOR_POM} names no <fallback.version>"
    return found.group(1).strip()


def connector_coordinate(version: str | None = None) -> str:
    """The Maven coordinate of the connector (for the installed PySpark by default)."""
    return (
        f"org.apache.spark:spark-sql-kafka-0-10_{scala_binary()}:{version or pyspark.__version__}"
    )


def _jars_dir() -> Path:
    return cache_dir(f"spark-kafka-{pyspark.__version__}_{scala_binary()}")


def _drop_shipped(directory: Path) -> None:
    """Remove the jars PySpark ships already (in any version): one of each on the classpath."""
    shipped = {re.sub(r"-\d[^-]*\.jar$", "", jar.name) for jar in _spark_jars().glob("*.jar")}
    for jar in directory.glob("*.jar"):
        if re.sub(r"-\d[^-]*\.jar$", "", jar.name) in shipped:
            jar.unlink()


def fetch_connector(*, quiet: bool = True) -> Path:
    """Have Maven copy the connector's jars into the cache, once; returns the directory."""
    target = _jars_dir()
    if is_complete(target):
        return target
    what = f"Spark's Kafka connector {connector_coordinate()}"
    properties = {"spark.version": pyspark.__version__, "scala.binary": scala_binary()}
    try:
        copy_dependencies(CONNECTOR_POM, target, what, properties, quiet=quiet)
    except MavenMissing as exc:
        raise ConfigurationError(f"{exc}, {_OTHER_SOURCE}") from None
    except MavenFailed as exc:
        if not re.search(r"Could not find artifact|was not found in", str(exc)):
            raise ConfigurationError(f"{exc} ({_OTHER_SOURCE})") from None
        fallback = _fallback_version()
        print(
            f"{connector_coordinate()} is not on Maven Central; using "
            f"{connector_coordinate(fallback)}",
            file=sys.stderr,
        )
        try:
            copy_dependencies(
                CONNECTOR_POM, target, what, {**properties, "spark.version": fallback}, quiet=quiet
            )
        except (MavenMissing, MavenFailed) as again:
            raise ConfigurationError(f"{again} ({_OTHER_SOURCE})") from None
    _drop_shipped(target)
    return target


def connector_jars() -> list[str]:
    """The connector's jars in the cache, fetched first (saying so on stderr) when missing."""
    if not is_complete(_jars_dir()):
        print(
            f"fetching Spark's Kafka connector with Maven (once; {_FETCH_HINT} does it ahead)...",
            file=sys.stderr,
        )
    return sorted(str(jar) for jar in fetch_connector().glob("*.jar"))


def _fetched_version() -> str | None:
    """The connector version in the cache (the fallback's, when it was used)."""
    for jar in _jars_dir().glob("spark-sql-kafka-0-10_*.jar"):
        return jar.stem.rsplit("-", 1)[-1]
    return None


def session_settings(master: str) -> dict[str, str]:
    """What a session needs to load the connector: the cached jars locally, the coordinate for
    a cluster to resolve (the version fetched here, when it was)."""
    if is_local(master):
        return {"spark.jars": ",".join(connector_jars())}
    return {"spark.jars.packages": connector_coordinate(_fetched_version())}


def require_connector(spark: SparkSession) -> None:
    """Fail in one line when `spark` cannot load the connector (a session started earlier
    without its jars, a cluster without Maven access)."""
    if not official_connector_available(spark):
        raise ConfigurationError(
            f"this Spark session cannot load Spark's Kafka connector ({connector_coordinate()}): "
            f"start it with the connector's jars (spark.jars), {_OTHER_SOURCE}"
        )


def main() -> None:
    """`make spark-kafka-jars`: fetch the connector's jars once, print their directory."""
    try:
        print(fetch_connector())
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
