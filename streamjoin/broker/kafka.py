"""Launch Apache Kafka itself (KRaft, one combined broker/controller node) from the cached jars.

The pinned release (`kafka_jars`) runs on Java 17+ with a bounded heap. The first start formats
the storage; `data_dir` keeps logs and metadata, so a restart on the same directory has the same
topics, records and committed offsets (without it, a temporary directory is removed on stop).
The settings suit development and tests: one replica for internal topics, no initial rebalance
delay, no auto topic creation, no time-based retention by default (a topic's own still applies:
window changelogs keep the window plus a day of wall-clock time, as Kafka Streams'), and session
timeouts down to 500 ms.

Secured listeners (`listeners=`) come next to the PLAINTEXT one (which the launcher and the
controller use): TLS with certificates made at the first start (`streamjoin.broker.tls`, PEM
key and trust stores), mutual TLS (`ssl.client.auth=required`), and SASL with PLAIN (users in
the listener's JAAS config) and SCRAM-SHA-256/512 (users added when the storage is formatted).
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamjoin.broker.base import Broker, free_port
from streamjoin.broker.errors import BrokerError, BrokerNotReady
from streamjoin.broker.kafka_jars import find_java, kafka_classpath, kafka_version
from streamjoin.broker.probe import accepts_connections
from streamjoin.broker.tls import TlsFiles, make_certificates
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("KafkaBroker", "Listener")

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_NAME = re.compile(r"[A-Za-z0-9._-]+")
_PASSWORD = re.compile(r'[^"\\,=\]\s]+')


@dataclass(frozen=True)
class Listener:
    """A secured listener: its name (letters, digits, _), its security protocol (SSL, SASL_SSL,
    SASL_PLAINTEXT), whether it requires client certificates, its SASL mechanisms, its port
    (None: a free one)."""

    name: str
    protocol: str
    client_auth: bool = False
    mechanisms: Sequence[str] = SASL_MECHANISMS
    port: int | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def _jaas(mechanism: str, users: Mapping[str, str]) -> str:
    if mechanism == "OAUTHBEARER":  # Kafka's unsecured JWTs ("alg": "none"): for tests only
        return (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="broker";'
        )
    if mechanism == "PLAIN":
        accounts = "".join(f' user_{name}="{password}"' for name, password in users.items())
        return f"org.apache.kafka.common.security.plain.PlainLoginModule required{accounts};"
    return "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def _listener_settings(
    listeners: Sequence[Listener], tls: TlsFiles | None, users: Mapping[str, str]
) -> dict[str, object]:
    """server.properties entries of the secured listeners (ports are set by then)."""
    settings: dict[str, object] = {}
    if tls is not None:
        settings |= {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": tls.broker,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": tls.ca,
        }
    for listener in listeners:
        prefix = f"listener.name.{listener.name.lower()}"
        if listener.client_auth:
            settings[f"{prefix}.ssl.client.auth"] = "required"
        if listener.uses_sasl:
            settings[f"{prefix}.sasl.enabled.mechanisms"] = ",".join(listener.mechanisms)
            for mechanism in listener.mechanisms:
                settings[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = _jaas(mechanism, users)
    return settings


_NODE_ID = 1
_LOG4J = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
"""


def _server_properties(
    *,
    host: str,
    port: int,
    controller_port: int,
    logs: Path,
    partitions: int,
    listeners: Sequence[Listener] = (),
) -> dict[str, object]:
    served = "".join(f",{x.name}://{host}:{x.port}" for x in listeners)
    protocols = "".join(f",{x.name}:{x.protocol}" for x in listeners)
    return {
        "process.roles": "broker,controller",
        "node.id": _NODE_ID,
        "controller.quorum.voters": f"{_NODE_ID}@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}{served}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}{served}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": (f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{protocols}"),
        "log.dirs": logs,
        "num.partitions": partitions,
        "auto.create.topics.enable": "false",
        # No time-based retention: tests and the demo produce historical event times (2023),
        # which Kafka's default 7 days would delete 30 s after start (its first retention check).
        "log.retention.ms": -1,
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 500,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 4,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 4,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        # Sized for a small machine: fewer threads, a 16 MiB (not 128 MiB) compaction buffer.
        "num.network.threads": 2,
        "num.io.threads": 4,
        "background.threads": 4,
        "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
        # The cleaner compacts and applies compact,delete topics' retention each time it wakes:
        # every second when idle (not 15 s), so tests of changelog retention need not wait.
        "log.cleaner.backoff.ms": 1_000,
    }


def _cluster_id() -> str:
    """A random cluster id in Kafka's form: a UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class KafkaBroker(Broker):
    """Apache Kafka (the pinned release) on loopback; see `Broker` for the life cycle.

    `data_dir` keeps the broker's logs, metadata and its own output (`kafka.log`) across
    restarts; `partitions` is the count of topics created without one; `heap` bounds the JVM.
    `listeners` are secured listeners beside the PLAINTEXT one, `users` (name -> password)
    the SASL accounts (PLAIN and SCRAM); TLS certificates go to `<home>/tls` (`self.tls`).
    """

    stop_timeout = 30.0

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        data_dir: Path | None = None,
        partitions: int = 1,
        heap: str = "512m",
        startup_timeout: float = 120.0,
        log_path: Path | None = None,
        listeners: Sequence[Listener] = (),
        users: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(port, host=host, startup_timeout=startup_timeout, log_path=log_path)
        if partitions < 1:
            raise BrokerError(f"partitions must be at least 1, not {partitions}")
        self.name = f"Apache Kafka {kafka_version()}"
        self.data_dir = data_dir
        self.partitions = partitions
        self.heap = heap
        self.listeners = tuple(listeners)
        self.users = dict(users or {})
        for name, password in self.users.items():
            if not _NAME.fullmatch(name) or not _PASSWORD.fullmatch(password):
                raise BrokerError(
                    f"SASL user {name!r}: use letters, digits, '.', '_' or '-' in the name, and "
                    "no quote, backslash, comma, '=' or ']' in the password"
                )
        self.tls: TlsFiles | None = None
        self._temp_dir: Path | None = None

    def _listener(self, name: str) -> Listener:
        for served in self.listeners:
            if served.name == name:
                return served
        raise BrokerError(f"no listener {name!r}")

    def address(self, listener: str) -> str:
        """HOST:PORT of the secured listener named `listener` (ports are set on start)."""
        return f"{self.host}:{self._listener(listener).port}"

    def client_security(
        self, listener: str, *, mechanism: str = "SCRAM-SHA-512", client_cert: bool = False
    ) -> KafkaSecurity:
        """What a client of `listener` needs: the CA (and, with `client_cert` or on a mutual
        TLS listener, the client certificate), and the first user's credentials."""
        served = self._listener(listener)
        settings: dict[str, Any] = {"security_protocol": served.protocol}
        if served.uses_tls:
            assert self.tls is not None, "the certificates are made on start"
            settings["ssl_cafile"] = str(self.tls.ca)
            if client_cert or served.client_auth:
                settings["ssl_certfile"] = str(self.tls.client_cert)
                settings["ssl_keyfile"] = str(self.tls.client_key)
        if served.uses_sasl:
            user, password = next(iter(self.users.items()))
            settings |= {"sasl_mechanism": mechanism, "sasl_username": user}
            settings["sasl_password"] = password
        return KafkaSecurity(**settings)

    @property
    def directory(self) -> Path:
        """Where the broker keeps its data, settings and certificates."""
        return self._home()

    def _command(self) -> list[str]:
        assert self.port is not None
        java, classpath = find_java(), kafka_classpath()
        home = self._home()
        logs = home / "logs"
        properties = home / "server.properties"
        self.listeners = tuple(
            x if x.port else Listener(x.name, x.protocol, x.client_auth, x.mechanisms,
                                      free_port(self.host))
            for x in self.listeners
        )  # fmt: skip
        if any(x.uses_tls for x in self.listeners) and self.tls is None:
            tls_dir = home / "tls"
            existing = TlsFiles(
                tls_dir / "ca.pem", tls_dir / "broker.pem", tls_dir / "client.pem",
                tls_dir / "client.key",
            )  # fmt: skip
            self.tls = existing if existing.broker.is_file() else make_certificates(tls_dir)
        settings = _server_properties(
            host=self.host,
            port=self.port,
            controller_port=free_port(self.host),
            logs=logs,
            partitions=self.partitions,
            listeners=self.listeners,
        ) | _listener_settings(self.listeners, self.tls, self.users)
        properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        log4j = home / "log4j2.properties"
        log4j.write_text(_LOG4J)
        jvm = [java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError"]
        jvm += ["-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}"]
        jvm += ["-cp", classpath]
        if not (logs / "meta.properties").is_file():
            self._format(jvm, properties)
        return [*jvm, "kafka.Kafka", str(properties)]

    def _wait_ready(self) -> None:
        """Ready once the PLAINTEXT listener answers and every secured one accepts connections:
        Kafka opens its listeners one after another, and a client of the SSL listener was
        refused right after the PLAINTEXT one answered."""
        super()._wait_ready()
        deadline = time.monotonic() + self.startup_timeout
        for listener in self.listeners:
            assert listener.port is not None
            while not accepts_connections(self.host, listener.port, timeout=0.5):
                if time.monotonic() > deadline:
                    raise BrokerNotReady(
                        f"{self.name}'s listener {listener.name} did not open on port "
                        f"{listener.port} within {self.startup_timeout:g} s; last lines of its "
                        f"log:\n{self.log_tail()}"
                    )
                time.sleep(0.02)

    def _home(self) -> Path:
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            return self.data_dir.resolve()
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="streamjoin-kafka-"))
        return self._temp_dir

    def _format(self, jvm: list[str], properties: Path) -> None:
        """Format the KRaft storage once (what `kafka-storage.sh format` does)."""
        flag = f"--config={properties}"
        scram = [
            f"--add-scram={mechanism}=[name={name},password={password}]"
            for name, password in self.users.items()
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        ]
        done = subprocess.run(
            # "--cluster-id=" because an id may begin with "-".
            [
                *jvm,
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={_cluster_id()}",
                flag,
                *scram,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=self.startup_timeout,
        )
        if done.returncode != 0:
            raise BrokerError(
                f"formatting {self.name}'s storage failed (exit {done.returncode}):\n"
                + (done.stdout + done.stderr).strip()
            )

    def _default_log_path(self) -> Path:
        return self._home() / "kafka.log"

    def _cleanup(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self._log_path = None
