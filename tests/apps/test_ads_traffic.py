"""`demo.py --traffic-only` (the compose file's one-shot `traffic` service) as compose runs it:
live traffic, stamped from the current time and never ahead of the clock (Kafka's retention
keeps it, and a second run is not late for the join), sent once per seed (a second `docker
compose up` adds no duplicates), and more with another seed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from streamjoin.broker import Broker
from streamjoin.kafka.connection import connect
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.kafka.watermarks import log_bounds

pytestmark = pytest.mark.broker

DEMO = Path(__file__).resolve().parents[2] / "apps" / "ads" / "demo.py"
TOPICS, PARTITIONS = ("ads-impressions", "ads-clicks"), 8


def _send(bootstrap: str, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--traffic-only", "--bootstrap", bootstrap, *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _records(bootstrap: str) -> dict[tuple[str, int, int], int]:
    """(topic, partition, offset) -> timestamp of every record in the two topics."""
    partitions = [TopicPartition(t, p) for t in TOPICS for p in range(PARTITIONS)]
    ends = {(b.topic, b.partition): b.end for b in await log_bounds(bootstrap, partitions)}
    consumer = connect(bootstrap).consumer(enable_auto_commit=False)
    await consumer.start()
    found: dict[tuple[str, int, int], int] = {}
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        while len(found) < sum(ends.values()):
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                found.update({(tp.topic, tp.partition, r.offset): r.timestamp for r in records})
    finally:
        await consumer.stop()
    return found


async def test_traffic_is_stamped_now_and_sent_once_per_seed(broker: Broker, unique: str) -> None:
    bs = broker.bootstrap
    await ensure_topics(bs, [TopicSpec(t, PARTITIONS) for t in TOPICS])
    before = await _records(bs)  # the demo's test may have sent traffic here already
    seed = int(unique, 16) % 1_000_000  # the demo's own seed may have been sent already
    started = int(time.time() * 1000)
    options = ["--impressions", "300", "--click-within-s", "1", "--seed", str(seed)]
    first = _send(bs, *options)
    assert f"sent the traffic of seed {seed}; to send more, run it again with another seed" in first
    sent = await _records(bs)
    new = {key: stamp for key, stamp in sent.items() if key not in before}
    assert sum(1 for topic, _, _ in new if topic == "ads-impressions") == 300
    # Stamped from now, and each record sent once the clock had reached its timestamp.
    sent_by = int(time.time() * 1000)
    assert all(started <= stamp <= sent_by for stamp in new.values())

    again = _send(bs, *options)
    assert f"the traffic of seed {seed} is in ads-impressions already: nothing sent" in again
    assert await _records(bs) == sent

    _send(bs, *options, "--seed", str(seed + 1))
    assert len(await _records(bs)) > len(sent) + 300
