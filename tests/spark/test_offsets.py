"""Offset selections on the command line and the ranges planned from the broker's watermarks."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaProducer
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.broker import Broker
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.spark.kafka.offsets import (
    OffsetRange,
    OffsetSelection,
    parse_offset_selection,
    plan_ranges,
    ranges_from_json,
    ranges_to_json,
)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("clicks=100:", OffsetSelection("clicks", None, 100, None)),
        ("clicks/2=100:5000", OffsetSelection("clicks", 2, 100, 5000)),
        ("a.b-c=:7", OffsetSelection("a.b-c", None, None, 7)),
    ],
)
def test_selections_parse(text: str, parsed: OffsetSelection) -> None:
    assert parse_offset_selection(text) == parsed


@pytest.mark.parametrize("text", ["clicks", "clicks=1", "clicks/x=1:2", "=1:2"])
def test_bad_selections_say_how_to_write_them(text: str) -> None:
    with pytest.raises(ConfigurationError, match="TOPIC=START:END"):
        parse_offset_selection(text)


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1), st.integers(0, 99), st.integers(0, 10**12), st.integers(0, 10**12)
        )
    )
)
def test_ranges_survive_their_json_option(raw: list[tuple[str, int, int, int]]) -> None:
    ranges = [OffsetRange(*r) for r in raw]
    assert ranges_from_json(ranges_to_json(ranges)) == ranges


async def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for partition, count in per_partition.items():
            for i in range(count):
                await producer.send(topic, b"v%d" % i, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


@pytest.mark.broker
async def test_ranges_end_at_the_fetched_high_watermark(broker: Broker, unique: str) -> None:
    """Batched produce makes the embedded broker's ListOffsets wrong; the plan is not."""
    topic = f"ranges-{unique}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 3)])
    await produce(broker.bootstrap, topic, {0: 500, 1: 20})
    planned = await asyncio_to_thread_plan(broker.bootstrap, topic, [])
    assert planned == [
        OffsetRange(topic, 0, 0, 500),
        OffsetRange(topic, 1, 0, 20),
        OffsetRange(topic, 2, 0, 0),
    ]
    narrowed = await asyncio_to_thread_plan(
        broker.bootstrap,
        topic,
        [OffsetSelection(topic, None, 10, None), OffsetSelection(topic, 0, None, 100)],
    )
    assert narrowed == [
        OffsetRange(topic, 0, 10, 100),
        OffsetRange(topic, 1, 10, 20),
        OffsetRange(topic, 2, 10, 10),
    ]


async def asyncio_to_thread_plan(
    bootstrap: str, topic: str, selections: list[OffsetSelection]
) -> list[OffsetRange]:
    """plan_ranges is synchronous (it runs its own loop in a helper thread)."""
    return await asyncio.to_thread(plan_ranges, bootstrap, [topic], selections)
