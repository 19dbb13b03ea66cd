"""A send that fails while partitions are revoked (issue 35, item 4), on a real broker with the
worker in this process: the failure is injected at the worker's producer, which holds the
output batches it is given (as a broker that does not acknowledge them would) and fails them
when the revocation starts.

Nothing may be committed past an output that was not delivered, and a revoked task is never
committed again: the worker stops with one line and the group's next owner reprocesses from
the last good commit, so every result comes out.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import harness
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaTimeoutError

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.output.producer_sink import DeliveryError

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PAIRS = 200


class HeldOutputs:
    """Wraps a producer's `send_batch`: once armed, batches for `topic` are not sent; their
    deliveries stay pending until `fail` (a broker that stopped acknowledging them)."""

    def __init__(self, producer: Any, topic: str) -> None:
        self.armed = False
        self.held: list[asyncio.Future[Any]] = []
        self._topic = topic
        self._send_batch = producer.send_batch
        producer.send_batch = self._send

    async def _send(self, batch: Any, topic: str, *, partition: int) -> Any:
        if not self.armed or topic != self._topic:
            return await self._send_batch(batch, topic, partition=partition)
        delivery: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.held.append(delivery)
        return delivery

    def fail(self) -> None:
        for delivery in self.held:
            if not delivery.done():
                delivery.set_exception(KafkaTimeoutError("Batch expired"))


async def send_pairs(bootstrap: str, suffix: str, auctions: range) -> None:
    """Impressions, then their clicks (after every impression in event time: with the join's
    `before=0` and no grace, a click behind stream time would be late)."""
    await harness.send(bootstrap, f"imp-{suffix}", auctions)
    await harness.send(bootstrap, f"clk-{suffix}", auctions, ts0=harness.EVENT_T0 + 100_000)


async def joined(bootstrap: str, topic: str, auctions: range, within_s: float = 60) -> None:
    """Until every auction of `auctions` is in the output (AssertionError naming the missing)."""
    deadline = time.monotonic() + within_s
    while (missing := set(auctions) - await harness.joined(bootstrap, topic)) and (
        time.monotonic() < deadline
    ):
        pass
    assert not missing, f"{len(missing)} missing, e.g. {sorted(missing)[:20]}"


async def committed_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


async def test_a_send_failing_during_a_revocation_commits_nothing_past_it(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs = broker.bootstrap
    app = harness.make_app(unique)
    out = f"out-{unique}"
    await ensure_topics(
        bs, [TopicSpec(f"{t}-{unique}", harness.PARTITIONS) for t in ("imp", "clk", "out")]
    )
    # No periodic commit in this test's time: the revocation's commit is the first to flush.
    first = harness.Running(app, bs, tmp_path / "w1", commit_interval_s=120)
    second = harness.Running(app, bs, tmp_path / "w2")
    async with harness.workers(first, second):
        await first.start()
        worker = first.worker
        assert worker.manager is not None and worker.sink is not None
        manager = worker.manager
        await harness.until(lambda: len(first.running_tasks()) == 2, 30, "both tasks on w1")
        await send_pairs(bs, unique, range(PAIRS // 2))
        await harness.until(lambda: len(manager.positions()) == 4, 30, "first half processed")
        await joined(bs, out, range(PAIRS // 2))
        delivered = {(tp.topic, tp.partition): o for tp, o in manager.positions().items()}

        outputs = HeldOutputs(worker.sink._producer, out)
        outputs.armed = True
        await send_pairs(bs, unique, range(PAIRS // 2, PAIRS))
        ends = {tp: o + PAIRS // 4 for tp, o in delivered.items()}
        await harness.until(
            lambda: {(tp.topic, tp.partition): o for tp, o in manager.positions().items()} == ends,
            30,
            "second half processed, its outputs held",
        )
        assert outputs.held, "outputs of the second half wait for delivery"

        revoking = manager.on_revoked

        async def on_revoked(partitions: frozenset[Any]) -> None:
            outputs.fail()  # the sends in flight fail while the partitions are revoked
            await revoking(partitions)

        manager.on_revoked = on_revoked  # type: ignore[method-assign]
        await second.start()
        await harness.until(lambda: bool(first.revoked), 60, "a task revoked from w1")
        assert first.task is not None
        done, _ = await asyncio.wait({first.task}, timeout=30)
        if not done:  # the worker went on: stop it (its final commit is the next commit)
            await first.stop()
        error = first.task.exception()
        offsets = await committed_offsets(bs, app.app_id)

        past = {tp: (o, delivered.get(tp, 0)) for tp, o in offsets.items() if o > delivered[tp]}
        assert not past, f"committed past undelivered outputs (committed, delivered): {past}"
        assert isinstance(error, DeliveryError), error
        assert "\n" not in str(error), str(error)

        await harness.until(lambda: len(second.running_tasks()) == 2, 60, "w2 takes both tasks")
        await joined(bs, out, range(PAIRS))
