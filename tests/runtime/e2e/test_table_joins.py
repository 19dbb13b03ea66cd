"""Table-table join in a worker on a real broker: the tables' stores restore from the tables'
own topics (no changelog topics of their own), across a restart on the same state directory
and on an empty one, and the latest result per key is the join of the final tables."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from harness import Running, until, workers
from worker_processes import EVENT_T0

from streamjoin import App
from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PARTITIONS = 2
KEYS = 40


def make_app(suffix: str, **settings: Any) -> App:
    app = App(f"bank-{suffix}", **settings)
    users = app.table(f"users-{suffix}", partitions=PARTITIONS)
    accounts = app.table(f"accounts-{suffix}", partitions=PARTITIONS)

    @app.join(users, accounts, how="left", into=f"user-accounts-{suffix}")
    def user_account(user: dict[str, Any], account: dict[str, Any] | None) -> Any:
        return [user["v"], account and account["v"]]

    return app


async def update(bootstrap: str, updates: list[tuple[str, str, int | None]], t0: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i, (topic, key, value) in enumerate(updates):
            payload = None if value is None else json.dumps({"v": value}).encode()
            await producer.send(topic, payload, key=key.encode(), timestamp_ms=t0 + i)
        await producer.flush()
    finally:
        await producer.stop()


async def latest(bootstrap: str, topic: str) -> dict[str, Any]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    out: dict[str, Any] = {}
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while batch := await consumer.getmany(timeout_ms=500):
            for records in batch.values():
                for r in records:
                    out[r.key.decode()] = None if r.value is None else json.loads(r.value)
    finally:
        await consumer.stop()
    return {k: v for k, v in out.items() if v is not None}


def expected(tables: dict[str, dict[str, int]], suffix: str) -> dict[str, Any]:
    users, accounts = tables[f"users-{suffix}"], tables[f"accounts-{suffix}"]
    return {k: [v, accounts.get(k)] for k, v in users.items()}


def round_of(suffix: str, salt: int) -> list[tuple[str, str, int | None]]:
    """Updates and deletes on both tables, the same keys again and again."""
    updates: list[tuple[str, str, int | None]] = []
    for k in range(KEYS):
        side = "users" if (k + salt) % 3 else "accounts"
        value = None if (k * 7 + salt) % 5 == 0 else k * 100 + salt
        updates.append((f"{side}-{suffix}", f"k{k}", value))
    return updates


class Bank:
    """The bank app's topics on the broker, the updates sent so far and the tables they make."""

    def __init__(self, bootstrap: str, suffix: str, **settings: Any) -> None:
        self.bootstrap, self.suffix = bootstrap, suffix
        self.app = make_app(suffix, **settings)
        self.topics = [f"users-{suffix}", f"accounts-{suffix}", f"user-accounts-{suffix}"]
        self.tables: dict[str, dict[str, int]] = {self.topics[0]: {}, self.topics[1]: {}}

    async def create(self) -> None:
        compacted = {"cleanup.policy": "compact"}
        await ensure_topics(
            self.bootstrap,
            [TopicSpec(t, PARTITIONS, compacted) for t in self.topics[:2]]
            + [TopicSpec(self.topics[2], PARTITIONS)],
        )

    async def apply(self, salt: int) -> None:
        updates = round_of(self.suffix, salt)
        await update(self.bootstrap, updates, EVENT_T0 + salt * 1_000)
        for topic, key, value in updates:
            if value is None:
                self.tables[topic].pop(key, None)
            else:
                self.tables[topic][key] = value

    async def settled(self) -> None:
        await until_output(self.bootstrap, self.topics[2], expected(self.tables, self.suffix))


async def test_restarts_restore_from_the_table_topics(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bank = Bank(broker.bootstrap, unique)
    await bank.create()
    for salt in (1, 2):
        await bank.apply(salt)
    first = Running(bank.app, broker.bootstrap, tmp_path / "a")
    async with workers(first):
        await first.start()
        await bank.settled()
        await first.stop()
    await bank.apply(3)  # while no worker runs
    again = Running(bank.app, broker.bootstrap, tmp_path / "a")  # same state: from its checkpoint
    async with workers(again):
        await again.start()
        await bank.settled()
        await bank.apply(4)
        await bank.settled()
        await again.stop()
    await bank.apply(5)
    fresh = Running(bank.app, broker.bootstrap, tmp_path / "b")  # empty state: the whole tables
    async with workers(fresh):
        await fresh.start()
        await until(lambda: bool(fresh.restored), 30, "the tables restored")
        assert sum(fresh.restored.values()) > 0
        await bank.settled()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        names = await admin.list_topics()
    finally:
        await admin.close()
    assert not [n for n in names if n.startswith(f"bank-{unique}-") and "changelog" in n]


async def test_scale_out_and_in_during_updates(broker: Broker, unique: str, tmp_path: Path) -> None:
    """A second worker learns a task's tables from their topics while the first keeps
    processing, takes it over, and a standby lets the last one take everything back."""
    bank = Bank(broker.bootstrap, unique, acceptable_recovery_lag=0, num_standby_replicas=1)
    await bank.create()
    await bank.apply(1)
    first = Running(bank.app, broker.bootstrap, tmp_path / "a")
    second = Running(bank.app, broker.bootstrap, tmp_path / "b")
    async with workers(first, second):
        await first.start()
        await bank.settled()
        await second.start()
        for salt in range(2, 6):  # during the rebalance and the hand-off
            await bank.apply(salt)
            await asyncio.sleep(0.5)
        await until(lambda: bool(second.running_tasks()), 60, "a task handed over")
        await bank.settled()
        await first.stop()  # scale in: the second takes every task back
        await bank.apply(6)
        await until(lambda: len(second.running_tasks()) == PARTITIONS, 60, "all tasks on one")
        await bank.settled()


async def test_a_versioned_table_restored_on_a_new_worker_joins_as_of_the_trade_time(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    app = App(f"market-{unique}")
    trades = app.topic(f"trades-{unique}", partitions=PARTITIONS)
    prices = app.table(f"prices-{unique}", partitions=PARTITIONS, versioned=True, history_ms=60_000)
    out = f"priced-{unique}"

    @app.join(trades, prices, how="left", into=out)
    def price(trade: dict[str, Any], price: dict[str, Any] | None) -> Any:
        return [trade["v"], price and price["v"]]

    await ensure_topics(
        bootstrap,
        [
            TopicSpec(trades.name, PARTITIONS),
            TopicSpec(prices.name, PARTITIONS, {"cleanup.policy": "compact"}),
            TopicSpec(out, PARTITIONS),
        ],
    )
    t0 = EVENT_T0
    # X is 1 from t0, 3 from t0+20s; the 2 from t0+10s arrives last, out of order
    await update(bootstrap, [(prices.name, "X", 1)], t0)
    await update(bootstrap, [(prices.name, "X", 3)], t0 + 20_000)
    await update(bootstrap, [(prices.name, "X", 2)], t0 + 10_000)
    first = Running(app, bootstrap, tmp_path / "a")
    async with workers(first):
        await first.start()
        await update(bootstrap, [(trades.name, "X", 100)], t0 + 15_000)
        await until_output(bootstrap, out, {"X": [100, 2]})
        await first.stop()
    fresh = Running(app, bootstrap, tmp_path / "b")  # restores every version from the topic
    async with workers(fresh):
        await fresh.start()
        await update(bootstrap, [(trades.name, "X", 200)], t0 + 5_000)
        await until_output(bootstrap, out, {"X": [200, 1]})
        await update(bootstrap, [(trades.name, "X", 300)], t0 + 25_000)
        await until_output(bootstrap, out, {"X": [300, 3]})


async def until_output(bootstrap: str, topic: str, want: dict[str, Any]) -> None:
    got: dict[str, Any] = {}
    for _ in range(60):
        got = await latest(bootstrap, topic)
        if got == want:
            return
        await asyncio.sleep(0.5)
    assert got == want
