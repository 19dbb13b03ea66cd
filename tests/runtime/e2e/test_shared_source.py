"""Joins reading one topic, through real workers: they are one sub-topology, so one task
owns each partition of the shared topic. Before, each join's tasks could land on different
workers that fetched and committed the same partition for themselves, and a scale-out lost
records. Here a third worker joins during traffic, under exactly-once: nothing is lost and
nothing repeated in any output. A task may be handed off twice here (w1 to w2 once w2 has
warmed up, then to w3); its members are at one offset of the shared partition when it is
committed, so none of them repeats what it did past the committed offset."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import worker_processes as processes

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

AUCTIONS = 3_000
TASK = "attribute.locate.rekeyed.rekeyed-right-repartition"
"""The one sub-topology: the three joins and the key_by reading clicks."""


EOS = ("--processing-guarantee", "exactly_once")


@pytest.fixture
def broker(kafka_broker: Broker) -> Broker:
    """Transactions need Apache Kafka (Tansu has none)."""
    return kafka_broker


async def test_a_scale_out_during_traffic_writes_each_result_of_joins_reading_one_topic_once(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    await ensure_topics(
        broker.bootstrap,
        [
            TopicSpec(f"{t}-{unique}", processes.PARTITIONS)
            for t in ("impressions", "clicks", "regions", "attributed", "rekeyed", "located")
        ],
    )
    # A backlog first: the tasks reading a shared partition are then at different offsets
    # when some move to the new worker (where separate tasks took each other's commits).
    await processes.produce(broker.bootstrap, unique, range(1_500), pace_s=0)
    workers = processes.Workers(broker.bootstrap, unique, tmp_path, app="shared_app:joins")
    workers.start("w1", *EOS)
    workers.start("w2", *EOS)
    try:
        await workers.wait_for_log("w1", "is running", within_s=60)
        workers.start("w3", *EOS)  # the scale-out, while the rest of the traffic comes in
        await asyncio.gather(
            processes.produce(broker.bootstrap, unique, range(1_500, AUCTIONS), pace_s=0.3),
            workers.wait_for_log("w3", "is running", within_s=60),
        )
        seen = {
            output: await processes.read_joined(
                broker.bootstrap,
                unique,
                AUCTIONS,
                within_s=90,
                settle_s=4,
                output=output,
                isolation_level="read_committed",
            )
            for output in ("attributed", "rekeyed", "located")
        }
    finally:
        codes = workers.stop_all()
    for output, counts in seen.items():
        missing = sorted(set(range(AUCTIONS)) - counts.keys())
        assert not missing, f"{output}: missing {len(missing)}: {missing[:20]}\n{workers.logs()}"
        assert max(counts.values()) == 1, f"{output}: {counts.most_common(3)}\n{workers.logs()}"
    assert codes == {"w1": 0, "w2": 0, "w3": 0}, workers.logs()
    assert any(f"task {TASK}_" in workers.log(name) for name in workers.processes), workers.logs()
