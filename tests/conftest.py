"""Fixtures shared by the whole suite: one broker per test session, chosen by the environment.

`STREAMJOIN_TEST_BROKER=kafka|tansu` picks the session broker: Apache Kafka (the default; the
pinned release, jars from `make kafka-jars`) or the embedded Tansu. Tests that pin Tansu's own
behaviour, and the demo's default, use `tansu_broker`, which is the session broker when that is
Tansu; the Java interop test uses `kafka_broker` likewise.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from streamjoin.broker import BROKER_KINDS, Broker, EmbeddedBroker, KafkaBroker, local_broker
from streamjoin.broker.kafka import Listener

settings.register_profile("streamjoin", deadline=None)
settings.load_profile("streamjoin")
"""Property tests have no per-example deadline: the suite shares its machine with brokers and
workers, and a slow example there is load, not a finding (speed is measured in bench/)."""

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for running in _started:
        terminalreporter.write_line(
            f"{running.name} broker started in {running.started_in or 0:.1f} s"
        )


@pytest.fixture(scope="session")
def session_broker() -> Iterator[Broker]:
    """The one broker of the session, of the kind chosen."""
    with local_broker(session_broker_kind()) as running:
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
    with EmbeddedBroker() as running:
        _started.append(running)
        yield running


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[Broker]:
    """Apache Kafka: the session's when that is Kafka, else one started for these tests."""
    if session_broker_kind() == "kafka":
        yield request.getfixturevalue("session_broker")
        return
    with KafkaBroker() as running:
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
    with KafkaBroker(listeners=listeners, users=dict([SECURED_USER])) as running:
        yield running
