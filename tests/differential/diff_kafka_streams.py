"""Apache Kafka Streams' own TopologyTestDriver, in one JVM for a whole batch of scenarios.

The jars (kafka-streams and kafka-streams-test-utils of the Kafka release streamjoin pins) are
fetched once by Maven into streamjoin's cache (`make kafka-streams-jars`, run by `make test`;
`python tests/differential/diff_kafka_streams.py` does the same). The harness
(java/JoinHarness.java) is compiled with javac when a run starts. Scenarios go to it on stdin
and outputs come back on stdout, one line each (see the harness's comment).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from diff_scenarios import Event, Scenario

from streamjoin.broker.kafka_jars import find_java, kafka_version
from streamjoin.maven_jars import cache_dir, copy_dependencies, is_complete

__all__ = ("KafkaStreams", "Output", "Outputs", "compile_harness", "jars_dir", "kafka_streams")

HERE = Path(__file__).resolve().parent
POM = HERE / "maven" / "pom.xml"
SOURCE = HERE / "java" / "JoinHarness.java"
FETCH_HINT = "make kafka-streams-jars"

Output = tuple[str | None, str | None, int]
"""(key, value, timestamp) of one output record."""
Outputs = dict[str, list[Output]]
"""Per output topic ("mid", "out"), its records in the order written."""


def jars_dir() -> Path:
    return cache_dir(f"kafka-streams-{kafka_version()}")


def fetch_jars() -> Path:
    """Have Maven copy the jars into the cache, once; returns their directory."""
    what = f"Kafka Streams {kafka_version()}'s jars"
    return copy_dependencies(POM, jars_dir(), what, {"kafka.version": kafka_version()})


def _classpath() -> str:
    jars = jars_dir()
    if not is_complete(jars):
        raise RuntimeError(
            f"Kafka Streams {kafka_version()}'s jars are not in {jars}: run {FETCH_HINT} "
            "(Maven, once)"
        )
    return str(jars / "*")


def compile_harness(out: Path) -> Path:
    """Compile the harness into `out`; returns `out`."""
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("the differential tests need a JDK 17+ (javac): apt-get install a JDK")
    subprocess.run(
        [javac, "-d", str(out), "-cp", _classpath(), str(SOURCE)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return out


def _token(text: str | None) -> str:
    return "-" if text is None else text


def _lines(scenario: Scenario) -> Iterator[str]:
    yield scenario.header()
    for event in scenario.events:
        yield _event_line(event)
    yield "end"


def _event_line(event: Event) -> str:
    if event.topic == "wall":
        return f"wall {event.timestamp}"
    return f"pipe {event.topic} {_token(event.key)} {_token(event.value)} {event.timestamp}"


class KafkaStreams:
    """A running harness JVM."""

    def __init__(self, classes: Path, tmp: Path) -> None:
        self._log = tmp / "harness.log"
        self._stderr = self._log.open("w")
        self._process = subprocess.Popen(
            [
                find_java(),
                f"-Djava.io.tmpdir={tmp}",
                "-cp",
                f"{classes}:{_classpath()}",
                "JoinHarness",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1 << 16,
        )

    def start(self, scenarios: Iterable[Scenario]) -> Callable[[], list[Outputs | str]]:
        """Send a batch; returns what waits for its results (each scenario's outputs, or the
        error the harness reported for it). The JVM works on it meanwhile."""
        batch = list(scenarios)
        process = self._process
        assert process.stdin is not None
        stdin = process.stdin
        results: list[Outputs | str] = []

        def write() -> None:
            for scenario in batch:
                stdin.write("\n".join(_lines(scenario)) + "\n")
            stdin.flush()

        def read() -> None:
            results.extend(self._read_one() for _ in batch)

        threads = [threading.Thread(target=f, daemon=True) for f in (write, read)]
        for thread in threads:
            thread.start()

        def wait() -> list[Outputs | str]:
            for thread in threads:
                thread.join()
            if len(results) != len(batch):
                raise RuntimeError(self._ended())
            return results

        return wait

    def _read_one(self) -> Outputs | str:
        assert self._process.stdout is not None
        outputs: Outputs = {}
        error: str | None = None
        for raw in self._process.stdout:
            line = raw.rstrip("\n")
            if line == "end":
                return error if error is not None else outputs
            if line.startswith("error "):
                error = line[len("error ") :]
                continue
            _, topic, key, value, timestamp = line.split(" ")
            outputs.setdefault(topic, []).append(
                (None if key == "-" else key, None if value == "-" else value, int(timestamp))
            )
        raise RuntimeError(self._ended())

    def _ended(self) -> str:
        tail = self._log.read_text(errors="replace").strip().splitlines()[-5:]
        return f"the Kafka Streams harness ended (exit {self._process.poll()}): {' | '.join(tail)}"

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stderr.close()


@contextmanager
def kafka_streams(classes: Path, tmp: Path) -> Iterator[KafkaStreams]:
    """The harness JVM, its state stores under `tmp`."""
    harness = KafkaStreams(classes, tmp)
    try:
        yield harness
    finally:
        harness.close()


if __name__ == "__main__":  # `make kafka-streams-jars`
    try:
        print(fetch_jars())
    except Exception as exc:  # noqa: BLE001 - one line, whatever Maven said
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
