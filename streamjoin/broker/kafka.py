"""Launch Apache Kafka itself (KRaft, one combined broker/controller node) from the cached jars.

The pinned release (`kafka_jars`) runs on Java 17+ with a bounded heap. The first start formats
the storage; `data_dir` keeps logs and metadata, so a restart on the same directory has the same
topics, records and committed offsets (without it, a temporary directory is removed on stop).
The settings suit development and tests: one replica for internal topics, no initial rebalance
delay, no auto topic creation, no time-based retention by default (a topic's own still applies:
window changelogs keep the window plus a day of wall-clock time, as Kafka Streams'), and session
timeouts down to 500 ms.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from streamjoin.broker.base import Broker, free_port
from streamjoin.broker.errors import BrokerError
from streamjoin.broker.kafka_jars import find_java, kafka_classpath, kafka_version

__all__ = ("KafkaBroker",)

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
    *, host: str, port: int, controller_port: int, logs: Path, partitions: int
) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": _NODE_ID,
        "controller.quorum.voters": f"{_NODE_ID}@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
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
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _cluster_id() -> str:
    """A random cluster id in Kafka's form: a UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class KafkaBroker(Broker):
    """Apache Kafka (the pinned release) on loopback; see `Broker` for the life cycle.

    `data_dir` keeps the broker's logs, metadata and its own output (`kafka.log`) across
    restarts; `partitions` is the count of topics created without one; `heap` bounds the JVM.
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
    ) -> None:
        super().__init__(port, host=host, startup_timeout=startup_timeout, log_path=log_path)
        if partitions < 1:
            raise BrokerError(f"partitions must be at least 1, not {partitions}")
        self.name = f"Apache Kafka {kafka_version()}"
        self.data_dir = data_dir
        self.partitions = partitions
        self.heap = heap
        self._temp_dir: Path | None = None

    def _command(self) -> list[str]:
        assert self.port is not None
        java, classpath = find_java(), kafka_classpath()
        home = self._home()
        logs = home / "logs"
        properties = home / "server.properties"
        properties.write_text(
            _server_properties(
                host=self.host,
                port=self.port,
                controller_port=free_port(self.host),
                logs=logs,
                partitions=self.partitions,
            )
        )
        log4j = home / "log4j2.properties"
        log4j.write_text(_LOG4J)
        jvm = [java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError"]
        jvm += ["-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}"]
        jvm += ["-cp", classpath]
        if not (logs / "meta.properties").is_file():
            self._format(jvm, properties)
        return [*jvm, "kafka.Kafka", str(properties)]

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
        done = subprocess.run(
            # "--cluster-id=" because an id may begin with "-".
            [*jvm, "kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", flag],
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
