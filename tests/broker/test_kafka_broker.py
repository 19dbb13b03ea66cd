"""The Apache Kafka launcher: clear errors when Java or the jars are missing, a clean stop, and a
restart on the same data directory that keeps topics, records and committed offsets."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from streamjoin.broker import BrokerBinaryMissing, KafkaBroker
from streamjoin.broker.kafka_jars import find_java, kafka_classpath, kafka_version
from streamjoin.broker.probe import kafka_api_versions_ok
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = pytest.mark.broker


@pytest.fixture
def no_cached_java() -> Iterator[None]:
    find_java.cache_clear()
    yield
    find_java.cache_clear()


def test_missing_jars_say_what_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(BrokerBinaryMissing, match=r"jars are not in .* run make kafka-jars"):
        kafka_classpath()
    with pytest.raises(BrokerBinaryMissing, match="make kafka-jars"):
        KafkaBroker().start()


@pytest.mark.usefixtures("no_cached_java")
def test_missing_java_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(BrokerBinaryMissing, match="needs Java 17 or newer and none was found"):
        find_java()


async def _produce_and_commit(bootstrap: str, topic: str, group: str) -> None:
    await ensure_topics(bootstrap, [TopicSpec(topic, 2)])
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait(topic, b"v%d" % i, partition=i % 2)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "")})
    finally:
        await consumer.stop()


async def _read_back(bootstrap: str, topic: str, group: str) -> tuple[list[bytes], int | None]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(tps)
        # Right after a restart Kafka 4.4 can answer OffsetFetch "no offset" while its group
        # coordinator is still loading __consumer_offsets (aiokafka takes that as None): ask again.
        committed = await consumer.committed(tps[0])
        for _ in range(50):
            if committed is not None:
                break
            await asyncio.sleep(0.2)
            committed = await consumer.committed(tps[0])
        await consumer.seek_to_beginning(*tps)
        values: list[bytes] = []
        while len(values) < 10:
            batches = await consumer.getmany(timeout_ms=5000)
            assert batches, f"only {len(values)} records came back"
            values += [r.value for records in batches.values() for r in records if r.value]
        return sorted(values), committed
    finally:
        await consumer.stop()


def test_restart_on_the_same_data_keeps_topics_records_and_offsets(
    tmp_path: Path, unique: str
) -> None:
    topic, group = f"survivor-{unique}", f"keeper-{unique}"
    first = KafkaBroker(data_dir=tmp_path / "kafka")
    with first:
        asyncio.run(_produce_and_commit(first.bootstrap, topic, group))
    assert not kafka_api_versions_ok("127.0.0.1", first.port or 0, timeout=0.3)
    assert (tmp_path / "kafka" / "logs" / "meta.properties").is_file()
    with KafkaBroker(first.port, data_dir=tmp_path / "kafka") as restarted:
        values, committed = asyncio.run(_read_back(restarted.bootstrap, topic, group))
    assert values == sorted(b"v%d" % i for i in range(10))
    assert committed == 3


def test_cli_runs_kafka_prints_bootstrap_and_stops_on_sigterm(tmp_path: Path) -> None:
    cli = subprocess.Popen(
        [sys.executable, "-m", "streamjoin", "broker", "--kafka", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert cli.stdout is not None
        first = cli.stdout.readline()
        assert first.startswith("bootstrap: 127.0.0.1:"), first
        assert f"Apache Kafka {kafka_version()} ready in" in cli.stdout.readline()
        host, port = first.split()[1].split(":")
        assert kafka_api_versions_ok(host, int(port))
        cli.send_signal(signal.SIGTERM)
        rest = cli.communicate(timeout=60)[0]
    finally:
        cli.kill()
        cli.wait()
    assert cli.returncode == 0
    assert "broker stopped" in rest
    assert not kafka_api_versions_ok(host, int(port), timeout=0.3)


@pytest.mark.parametrize("option", [["--data", "/tmp/x"], ["--tls"], ["--sasl-scram", "a:b"]])
def test_kafka_options_need_kafka(option: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streamjoin", "broker", *option],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--data, --partitions, --tls and --sasl-scram need --kafka" in done.stderr
