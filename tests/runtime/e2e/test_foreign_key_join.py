"""A foreign-key join on a real broker under traffic, through a scale-out (a second worker
joins while orders change their customers and customers change) and a worker restart: the
latest result per order is the join of the final tables, nothing missing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from harness import Running, until, workers
from worker_processes import EVENT_T0

from streamjoin import App
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

ORDER_PARTITIONS, CUSTOMER_PARTITIONS = 3, 2
ORDERS, CUSTOMERS = 60, 8


class Shop:
    def __init__(self, bootstrap: str, suffix: str) -> None:
        self.bootstrap = bootstrap
        self.app = App(f"fk-{suffix}", acceptable_recovery_lag=0, num_standby_replicas=1)
        self.orders = self.app.table(f"orders-{suffix}", partitions=ORDER_PARTITIONS)
        self.customers = self.app.table(f"customers-{suffix}", partitions=CUSTOMER_PARTITIONS)
        self.out = f"order-customers-{suffix}"

        @self.app.join(
            self.orders, self.customers, foreign_key=lambda o: o["c"], how="inner", into=self.out
        )
        def order_customer(order: dict[str, Any], customer: dict[str, Any]) -> Any:
            return [order["n"], customer["v"]]

        self.order_rows: dict[str, tuple[int, str]] = {}
        self.customer_rows: dict[str, int] = {}
        self.sent = 0

    async def create(self) -> None:
        compacted = {"cleanup.policy": "compact"}
        await ensure_topics(
            self.bootstrap,
            [
                TopicSpec(self.orders.name, ORDER_PARTITIONS, compacted),
                TopicSpec(self.customers.name, CUSTOMER_PARTITIONS, compacted),
                TopicSpec(self.out, ORDER_PARTITIONS),
            ],
        )

    async def traffic(self, salt: int) -> None:
        """Every customer, then every order (a new customer for a third of them), and a
        customer deleted and one recreated."""
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            records: list[tuple[str, str, Any]] = []
            for c in range(CUSTOMERS):
                value = None if (c + salt) % 7 == 0 else {"v": salt * 100 + c}
                records.append((self.customers.name, f"c{c}", value))
            for o in range(ORDERS):
                customer = f"c{(o + salt * (o % 3 == 0)) % CUSTOMERS}"
                records.append((self.orders.name, f"o{o}", {"n": salt, "c": customer}))
            for topic, key, value in records:
                self.sent += 1
                payload = None if value is None else json.dumps(value).encode()
                await producer.send(
                    topic, payload, key=key.encode(), timestamp_ms=EVENT_T0 + self.sent
                )
                if value is None:
                    self.customer_rows.pop(key, None)
                elif topic == self.orders.name:
                    self.order_rows[key] = (value["n"], value["c"])
                else:
                    self.customer_rows[key] = value["v"]
            await producer.flush()
        finally:
            await producer.stop()

    def expected(self) -> dict[str, Any]:
        return {
            key: [n, self.customer_rows[c]]
            for key, (n, c) in self.order_rows.items()
            if c in self.customer_rows
        }

    async def latest(self) -> dict[str, Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await consumer.start()
        out: dict[str, Any] = {}
        try:
            tps = [TopicPartition(self.out, p) for p in range(ORDER_PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while batch := await consumer.getmany(timeout_ms=500):
                for records in batch.values():
                    for r in records:
                        out[r.key.decode()] = None if r.value is None else json.loads(r.value)
        finally:
            await consumer.stop()
        return {k: v for k, v in out.items() if v is not None}

    async def settled(self) -> None:
        want, got = self.expected(), {}
        for _ in range(90):
            got = await self.latest()
            if got == want:
                return
            await asyncio.sleep(0.5)
        missing = sorted(set(want) - set(got))
        wrong = sorted(k for k in want if k in got and got[k] != want[k])
        raise AssertionError(
            f"missing {missing[:10]}, wrong {wrong[:10]}, extra {set(got) - set(want)}"
        )


async def test_scale_out_and_restart_during_foreign_key_traffic(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    shop = Shop(broker.bootstrap, unique)
    await shop.create()
    first = Running(shop.app, broker.bootstrap, tmp_path / "a")
    second = Running(shop.app, broker.bootstrap, tmp_path / "b")
    async with workers(first, second):
        await first.start()
        await shop.traffic(1)
        assert len(shop.expected()) > ORDERS // 2
        await shop.settled()
        await second.start()  # scale out while traffic goes on
        for salt in range(2, 5):
            await shop.traffic(salt)
            await asyncio.sleep(0.5)
        await until(lambda: bool(second.running_tasks()), 60, "a task moved to the new worker")
        await shop.settled()
        await first.stop()  # restart: the first worker leaves and comes back on its state
        await shop.traffic(5)
        restarted = Running(shop.app, broker.bootstrap, tmp_path / "a")
        async with workers(restarted):
            await restarted.start()
            await shop.traffic(6)
            await shop.settled()
