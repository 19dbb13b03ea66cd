"""End offsets come from fetched high watermarks, exact even for multi-record batches, and each
read of a long-lived reader is fresh."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import Broker
from streamjoin.state import StateError, StoreSpec, TaskSpec, changelog_topic, ensure_changelogs
from streamjoin.state.changelog_writer import ChangelogWriter
from streamjoin.state.end_offsets import ChangelogEnds, changelog_end_offset_sums

pytestmark = pytest.mark.broker


async def test_end_offset_sums_per_task(broker: Broker, producer: Any, unique: str) -> None:
    app = f"ends-{unique}"
    stores = (StoreSpec.kv("kv"), StoreSpec.window("win", retention_ms=1_000))
    await ensure_changelogs(broker.bootstrap, app, dict.fromkeys(stores, 3))
    for store, partition, count in (("kv", 0, 1234), ("win", 0, 10), ("kv", 1, 55)):
        writer = ChangelogWriter(producer, changelog_topic(app, store), partition)
        for i in range(count):
            writer.append(b"key-%d" % i, b"value")
        await writer.wait_confirmed(writer.seal())
    tasks = [TaskSpec(f"0_{p}", p, 3, stores) for p in range(3)]
    sums = await changelog_end_offset_sums(broker.bootstrap, app, tasks)
    assert sums == {"0_0": 1244, "0_1": 55, "0_2": 0}
    assert await changelog_end_offset_sums(broker.bootstrap, app, []) == {}


async def test_one_reader_of_ends_sees_what_was_written_between_its_reads(
    broker: Broker, producer: Any, unique: str
) -> None:
    app = f"ends-again-{unique}"
    stores = (StoreSpec.kv("kv"),)
    await ensure_changelogs(broker.bootstrap, app, dict.fromkeys(stores, 2))
    tasks = [TaskSpec(f"0_{p}", p, 2, stores) for p in range(2)]
    writer = ChangelogWriter(producer, changelog_topic(app, "kv"), 1)
    reader = ChangelogEnds(broker.bootstrap)
    try:
        assert await reader.sums(app, tasks) == {"0_0": 0, "0_1": 0}
        for count in (7, 30):
            for i in range(count):
                writer.append(b"key-%d" % i, b"value")
            await writer.wait_confirmed(writer.seal())
            assert (await reader.sums(app, tasks))["0_1"] == (7 if count == 7 else 37)
        # asked together (tasks promoted at one hand-off): served by one read, each its own
        partitions = [TopicPartition(changelog_topic(app, "kv"), p) for p in range(2)]
        both = await asyncio.gather(*(reader.ends([tp]) for tp in partitions))
        assert both == [{partitions[0]: 0}, {partitions[1]: 37}]
    finally:
        await reader.close()
    with pytest.raises(StateError, match="closed"):
        await reader.sums(app, tasks)


async def test_ends_read_ahead_answer_a_later_ask_only_for_what_they_covered(
    broker: Broker, producer: Any, unique: str
) -> None:
    """A promotion takes the ends read when its generation's JoinGroup answered (its previous
    owner had confirmed every write by then), not older ones, nor ends never read ahead."""
    app = f"ends-ahead-{unique}"
    await ensure_changelogs(broker.bootstrap, app, {StoreSpec.kv("kv"): 2})
    ahead, other = (TopicPartition(changelog_topic(app, "kv"), p) for p in range(2))
    writer = ChangelogWriter(producer, ahead.topic, ahead.partition)

    async def write(count: int) -> None:
        for i in range(count):
            writer.append(b"key-%d" % i, b"value")
        await writer.wait_confirmed(writer.seal())

    reader = ChangelogEnds(broker.bootstrap)
    try:
        await write(5)
        reader.read_ahead([ahead])
        assert await reader.ends_ahead([ahead]) == {ahead: 5}
        await write(3)  # after the read ahead: a later join's read would see it
        assert await reader.ends_ahead([ahead]) == {ahead: 5}
        assert await reader.ends_ahead([ahead, other]) == {ahead: 8, other: 0}
        reader.read_ahead([])  # the next join, with nothing to read ahead
        assert await reader.ends_ahead([ahead]) == {ahead: 8}
        reader.read_ahead([other])
        await write(2)
        assert await reader.ends_ahead([ahead]) == {ahead: 10}  # not read ahead: read now
    finally:
        await reader.close()


async def test_a_read_of_ends_from_a_broker_that_never_answers_fails_within_its_timeout() -> None:
    """The leader's assignment waits for these reads: a broker that takes the connection and
    never answers gives an error in the reader's time, not a wait as long as the client's."""
    silent = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    ends = ChangelogEnds(f"127.0.0.1:{port}", timeout_s=1.0)
    try:
        async with silent:
            with pytest.raises(StateError, match="no answer within 1s to the start of a read"):
                await asyncio.wait_for(ends.ends([TopicPartition("changelog", 0)]), 20)
    finally:
        await ends.close()
