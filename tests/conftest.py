"""Fixtures shared by the whole suite: one broker per test session, chosen by the environment.

`STREAMJOIN_TEST_BROKER=kafka|tansu` picks the session broker: Apache Kafka (the default; the
pinned release, jars from `make kafka-jars`) or the embedded Tansu. Tests that pin Tansu's own
behaviour, and the demo's default, use `tansu_broker`, which is the session broker when that is
Tansu; the Java interop test uses `kafka_broker` likewise.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import settings

from streamjoin.broker import BROKER_KINDS, Broker, EmbeddedBroker, KafkaBroker, local_broker
from streamjoin.broker.kafka import Listener

settings.register_profile("streamjoin", deadline=None)
settings.load_profile("streamjoin")
"""Property tests have no per-example deadline: the suite shares its machine with brokers and
workers, and a slow example there is load, not a finding (speed is measured in bench/)."""

B = TypeVar("B", bound=Broker)

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:  # the suite's shared helper modules (child_processes.py), for any test
    sys.path.insert(0, TESTS)

os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")
"""Spark's JVMs in the tests (the session's and those of the Spark commands) compile with C1
only: their jobs are small and short, so C2's compiling costs more CPU than it saves (a third
less CPU for a streaming query in its own process; the suite is CPU-bound on CI's 2 cores)."""

BROKER_ENV = "STREAMJOIN_TEST_BROKER"
DEFAULT_BROKER = "kafka"


def session_broker_kind() -> str:
    """Which broker the session runs on ($STREAMJOIN_TEST_BROKER, else the default)."""
    kind = os.environ.get(BROKER_ENV, "").strip().lower() or DEFAULT_BROKER
    if kind not in BROKER_KINDS:
        raise pytest.UsageError(f"{BROKER_ENV}={kind!r}: choose one of {', '.join(BROKER_KINDS)}")
    return kind


def pytest_report_header() -> str:
    return f"broker: {session_broker_kind()} (set {BROKER_ENV}=kafka|tansu to choose)"


_started: list[Broker] = []
"""The brokers this session started, for the start times in the summary (CI's budget)."""


_start_lines: list[str] = []
"""Start-time lines of the brokers of xdist's workers (sent in their `workeroutput`)."""


def _start_line(running: Broker) -> str:
    return f"{running.name} broker started in {running.started_in or 0:.1f} s"


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its controller prints the summary
        worker = os.environ.get("PYTEST_XDIST_WORKER", "worker")
        workeroutput["broker_starts"] = [f"{worker}: {_start_line(b)}" for b in _started]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    _start_lines.extend(getattr(node, "workeroutput", {}).get("broker_starts", []))


_module_seconds: Counter[str] = Counter()
"""Seconds of each test module (set-up, call and tear-down): where to look first when the
suite's time grows (`make test` must stay under 20 minutes in CI)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _module_seconds[report.nodeid.split("::")[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in [*map(_start_line, _started), *sorted(_start_lines)]:
        terminalreporter.write_line(line)
    if len(_module_seconds) > 1:
        terminalreporter.write_line(
            f"slowest test modules, of {sum(_module_seconds.values()):.0f} s of tests in all:"
        )
        for module, seconds in _module_seconds.most_common(10):
            terminalreporter.write_line(f"{seconds:7.1f} s  {module}")


@contextmanager
def _for_the_session(broker: B) -> Iterator[B]:
    """`broker` started, and at the session's end stopped at once: its data is thrown away, and
    a Kafka broker that served the whole suite takes over 30 s to close its partitions."""
    with broker as running:
        yield running
        running.stop(timeout=0)


@pytest.fixture(scope="session")
def session_broker() -> Iterator[Broker]:
    """The one broker of the session, of the kind chosen."""
    with _for_the_session(local_broker(session_broker_kind())) as running:
        _started.append(running)
        yield running


@pytest.fixture(scope="session")
def broker(session_broker: Broker) -> Broker:
    """The session's broker; tests isolate themselves with unique names (a test module may
    override this fixture to choose another broker)."""
    return session_broker


@pytest.fixture(scope="session")
def tansu_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """A Tansu broker: the session's when that is Tansu, else one started for these tests."""
    if session_broker_kind() == "tansu":
        yield request.getfixturevalue("session_broker")
        return
    with _for_the_session(EmbeddedBroker()) as running:
        _started.append(running)
        yield running


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """Apache Kafka: the session's when that is Kafka, else one started for these tests."""
    if session_broker_kind() == "kafka":
        yield request.getfixturevalue("session_broker")
        return
    with _for_the_session(KafkaBroker()) as running:
        _started.append(running)
        yield running


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "each_broker" in metafunc.fixturenames:
        kinds = [session_broker_kind()]
        kinds += ["tansu"] if kinds[0] != "tansu" else []
        metafunc.parametrize("each_broker", kinds, indirect=True)


@pytest.fixture
def each_broker(request: pytest.FixtureRequest) -> Broker:
    """The session's broker, and Tansu too when the session runs Apache Kafka: for the demo (whose
    default is Tansu) and a smoke test, which run on both."""
    name = "session_broker" if request.param == session_broker_kind() else "tansu_broker"
    chosen: Broker = request.getfixturevalue(name)
    return chosen


@pytest.fixture
def unique() -> str:
    """A short unique suffix for topic and group names."""
    return uuid.uuid4().hex[:10]


SECURED_USER = ("alice", "alice-secret")
"""The SASL user of `secured_kafka` (PLAIN and SCRAM-SHA-256/512)."""


@pytest.fixture(scope="session")
def secured_kafka() -> Iterator[KafkaBroker]:
    """Apache Kafka with secured listeners beside its PLAINTEXT one (for setup): SSL, mutual TLS
    (MTLS), SASL_SSL with PLAIN and SCRAM, SASL_PLAINTEXT with SCRAM-SHA-512 only
    (SCRAM_ONLY), and SASL_PLAINTEXT with OAUTHBEARER (OAUTH, unsecured JWTs); started once,
    for the tests that ask for it."""
    listeners = [
        Listener("SSL", "SSL"),
        Listener("MTLS", "SSL", client_auth=True),
        Listener("SASL_SSL", "SASL_SSL"),
        Listener("SCRAM_ONLY", "SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-512",)),
        Listener("OAUTH", "SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",)),
    ]
    secured = KafkaBroker(listeners=listeners, users=dict([SECURED_USER]))
    with _for_the_session(secured) as running:
        yield running


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make test` (pytest-xdist: `-n 2 --dist loadfile --no-loadscope-reorder`) each
    module goes whole to the next free worker, in collection order: the slow ones first, so that
    no long module starts last while the other worker has nothing left to do."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
