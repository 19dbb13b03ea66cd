"""In-process workers for the end-to-end tests of learners and follow-up rebalances: started
in the test's event loop, so a test can watch their roles, restores and revocations."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import learn_app
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from worker_processes import EVENT_T0

from streamjoin import App
from streamjoin.query.endpoint import QueryEndpoint
from streamjoin.query.server import QueryServer
from streamjoin.runtime.process.worker import Worker, WorkerOptions
from streamjoin.runtime.topology.app_topology import TaskId
from streamjoin.state.events import RestoreCompleted, StateEvent

PARTITIONS = 2
STATE_RECORDS = 600  # impressions per partition before the second worker arrives


make_app = learn_app.make_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Running:
    """A worker started in this event loop, with the restores it completed."""

    def __init__(
        self,
        app: App,
        bootstrap: str,
        state_dir: Path,
        capacity: int = 1,
        query_port: int | None = None,
        **options: Any,
    ) -> None:
        """`query_port`: serve queries (0: any free port); `options`: further WorkerOptions."""
        settings: dict[str, Any] = {
            "commit_interval_s": 0.5,
            "session_timeout_ms": 6_000,
            "heartbeat_interval_ms": 500,
            **options,
        }
        self.queries = None if query_port is None else QueryEndpoint(query_port)
        self.worker = Worker(
            app,
            WorkerOptions(bootstrap=bootstrap, state_dir=state_dir, capacity=capacity, **settings),
            services=[] if self.queries is None else [self.queries],
        )
        self.restored: dict[str, int] = {}
        self.revoked: list[frozenset[Any]] = []
        self.task: asyncio.Task[None] | None = None

    def query_server(self) -> QueryServer | None:
        """The query server of the worker's latest start, if it serves queries."""
        return None if self.queries is None else self.queries.server

    async def start(self) -> None:
        self.task = asyncio.create_task(self.worker.run())
        await asyncio.wait_for(self.worker.started.wait(), 30)
        assert self.worker.state is not None and self.worker.manager is not None
        self.worker.state.subscribe(self._on_event)
        manager = self.worker.manager
        original = manager.on_revoked

        async def on_revoked(partitions: frozenset[Any]) -> None:
            self.revoked.append(partitions)
            await original(partitions)

        manager.on_revoked = on_revoked  # type: ignore[method-assign]

    def _on_event(self, event: StateEvent) -> None:
        if isinstance(event, RestoreCompleted):
            self.restored[event.task_id] = event.restored

    def running_tasks(self) -> set[TaskId]:
        manager = self.worker.manager
        if manager is None:
            return set()
        return {t for t, a in manager.active.items() if a.running}

    async def stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.worker.stop()
            await asyncio.wait_for(self.task, 60)


async def until(condition: Callable[[], bool], within: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def send(
    bootstrap: str,
    topic: str,
    auctions: range,
    ts0: int | None = None,
    partitions: int = PARTITIONS,
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for a in auctions:
            value = json.dumps({"auction": a}).encode()
            await producer.send(
                topic,
                value,
                key=f"a{a}".encode(),
                timestamp_ms=(EVENT_T0 if ts0 is None else ts0) + a,
                partition=a % partitions,
            )
        await producer.flush()
    finally:
        await producer.stop()


async def joined(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> set[int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    seen: set[int] = set()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while True:
            batch = await consumer.getmany(timeout_ms=1_000)
            if not batch:
                return seen
            for records in batch.values():
                seen.update(json.loads(r.value)["auction"] for r in records)
    finally:
        await consumer.stop()


@contextlib.asynccontextmanager
async def workers(*running: Running) -> AsyncIterator[None]:
    try:
        yield
    finally:
        for r in running:
            with contextlib.suppress(Exception):
                await r.stop()
