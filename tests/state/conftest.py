"""Helpers for the state tests: a changelog writer stand-in and changelog record builders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import ConsumerRecord

from streamjoin.state import StateConfig, StateManager
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.reader import ReaderConfig


class RecordingWriter:
    """Collects what a store would send to its changelog (in place of ChangelogWriter)."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None, int | None]] = []

    def append(self, key: bytes, value: bytes | None, timestamp: int | None = None) -> None:
        self.records.append((key, value, timestamp))

    def as_changelog(self) -> list[ConsumerRecord[bytes, bytes]]:
        """The records as a consumer reads them back (stamped as the writer stamps them)."""
        return [
            changelog_record(i, key, value, stamp or 0)
            for i, (key, value, stamp) in enumerate(self.records)
        ]


def changelog_record(
    offset: int, key: bytes | None, value: bytes | None, timestamp: int = 0
) -> ConsumerRecord:  # type: ignore[type-arg]
    return ConsumerRecord(
        "changelog",
        0,
        offset,
        timestamp,
        0,
        key,
        value,
        None,
        len(key or b""),
        len(value or b""),
        (),
    )


@pytest.fixture
def recording_writer() -> Callable[[], RecordingWriter]:
    return RecordingWriter


@pytest.fixture
def make_record() -> Callable[[int, bytes | None, bytes | None], ConsumerRecord]:  # type: ignore[type-arg]
    return changelog_record


@pytest.fixture
async def producer(broker: Any) -> AsyncIterator[AIOKafkaProducer]:
    """A started bytes producer with small batches (so that many batches are in flight)."""
    started = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, max_batch_size=4096)
    await started.start()
    yield started
    await started.stop()


@pytest.fixture
async def managers(broker: Any, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Factory of started StateManagers, closed at teardown (tolerating ones already closed)."""
    opened: list[StateManager] = []

    async def make(
        producer: Any,
        *,
        state_dir: Path | None = None,
        app_id: str,
        max_pending_writes: int = 1000,
        isolation_level: str = "read_uncommitted",
        lock_timeout_s: float = 60.0,
        memory: MemoryBudget | None = None,
    ) -> StateManager:
        manager = StateManager(
            state_dir=state_dir or tmp_path / "state",
            app_id=app_id,
            bootstrap=broker.bootstrap,
            producer=producer,
            config=StateConfig(
                progress_interval_s=0.0,
                max_pending_writes=max_pending_writes,
                reader=ReaderConfig(isolation_level=isolation_level),
                lock_timeout_s=lock_timeout_s,
            ),
            memory=memory,
        )
        await manager.start()
        opened.append(manager)
        return manager

    yield make
    for manager in opened:
        await manager.close()


async def _read_changelog(
    bootstrap: str, topic: str, partition: int
) -> list[tuple[bytes, bytes | None]]:
    """Every (key, value) of a changelog partition, read until the fetched high watermark."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        found: list[tuple[bytes, bytes | None]] = []
        async with asyncio.timeout(30):
            while True:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    found.extend((record.key, record.value) for record in records)
                highwater = consumer.highwater(tp)
                if highwater is not None and await consumer.position(tp) >= highwater:
                    return found
    finally:
        await consumer.stop()


@pytest.fixture
def read_changelog(broker: Any) -> Callable[[str, int], Any]:
    def read(topic: str, partition: int) -> Any:
        return _read_changelog(broker.bootstrap, topic, partition)

    return read


async def _until(predicate: Callable[[], bool], seconds: float = 15.0) -> None:
    async with asyncio.timeout(seconds):
        while not predicate():  # noqa: ASYNC110 - fed by a background changelog reader
            await asyncio.sleep(0.02)


@pytest.fixture
def until() -> Callable[..., Any]:
    """Wait (polling) until a condition fed by background tasks holds."""
    return _until
