"""Queries on the tables beyond plain stream-table joins, two workers in this event loop: a
versioned table's latest value and its value as of a time (with its validity), both tables of
a foreign-key join by their keys, and a global table that every worker answers from its own
copy; the `streamjoin query` CLI on them."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import harness
import pytest
import query_tables_app
from query_tables_app import HISTORY_MS, PARTITIONS
from test_queries import APP_DIR, _run, get, produce
from worker_processes import EVENT_T0

import streamjoin
from streamjoin.broker import Broker
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.topics import TopicSpec, ensure_topics

pytestmark = [pytest.mark.broker]

PRICES = [("p1", EVENT_T0 + 1_000, 10), ("p1", EVENT_T0 + 3_000, 11), ("p1", EVENT_T0 + 2_000, 12)]
"""Out of time order: the version of +2000 takes its place between the others."""
ORDERS = {f"o{i}": {"customer": f"c{i % 3}", "n": i} for i in range(9)}
CUSTOMERS = {f"c{i}": {"name": f"customer {i}"} for i in range(3)}
COUNTRIES = {"fr": {"name": "France"}, "jp": {"name": "Japan"}, "br": {"name": "Brazil"}}


@dataclass
class Tables:
    workers: list[harness.Running]
    urls: list[str]
    suffix: str

    def store(self, name: str) -> str:
        return f"{name}-{self.suffix}"


async def answered(url: str, what: str) -> dict[str, Any]:
    for _ in range(300):
        status, answer, _ = await get(url)
        if status == 200:
            return answer
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: no answer from {url}")


@pytest.fixture(scope="module")
async def tables(
    session_broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Tables]:
    bs, suffix = session_broker.bootstrap, uuid.uuid4().hex[:10]
    tmp = tmp_path_factory.mktemp("table-queries")
    await ensure_topics(bs, [TopicSpec(f"{t}-{suffix}", n) for t, n in PARTITIONS.items()])
    await produce(
        bs,
        [(f"countries-{suffix}", code, value, EVENT_T0) for code, value in COUNTRIES.items()],
    )
    app = query_tables_app.make_app(suffix)
    both = [harness.Running(app, bs, tmp / name, query_port=0) for name in ("w1", "w2")]
    async with harness.workers(*both):
        for running in both:
            await running.start()
        servers = [w.query_server() for w in both]
        await harness.until(
            lambda: (
                all(w.running_tasks() for w in both)
                and sum(len(w.running_tasks()) for w in both) == 3 + 3 + 2 + 2
                and all(s is not None and len(s.service.placements()) == 10 for s in servers)
            ),
            60,
            "both workers run tasks and know where every task is",
        )
        urls = [s.service.url for s in servers if s is not None]
        tables = Tables(both, urls, suffix)
        await produce(
            bs,
            [(tables.store("prices"), key, {"price": v}, t) for key, t, v in PRICES]
            + [(tables.store("customers"), k, v, EVENT_T0) for k, v in CUSTOMERS.items()]
            + [(tables.store("orders"), k, v, EVENT_T0) for k, v in ORDERS.items()],
        )
        stores = f"{urls[0]}/stores"
        await answered(f"{stores}/{tables.store('prices')}/keys/p1?as_of={EVENT_T0 + 3_000}", "p1")
        for order in ORDERS:
            await answered(f"{stores}/{tables.store('orders')}/keys/{order}", order)
        for customer in CUSTOMERS:
            await answered(f"{stores}/{tables.store('customers')}/keys/{customer}", customer)
        yield tables


async def test_a_versioned_table_answers_its_latest_value_and_the_one_valid_at_a_time(
    tables: Tables,
) -> None:
    prices = tables.store("prices")
    for url in tables.urls:
        key_url = f"{url}/stores/{prices}/keys/p1"
        status, latest, _ = await get(key_url)
        assert status == 200, latest
        assert (latest["value"], latest["timestamp"], latest["valid_to"]) == (
            {"price": 11},
            EVENT_T0 + 3_000,
            None,
        )
        assert latest["role"] == "active"
        assert latest["partition"] == partition_for_key(b"p1", PARTITIONS["prices"])
        for as_of, value, valid_from, valid_to in (
            (EVENT_T0 + 1_000, 10, EVENT_T0 + 1_000, EVENT_T0 + 2_000),
            (EVENT_T0 + 2_999, 12, EVENT_T0 + 2_000, EVENT_T0 + 3_000),
            (EVENT_T0 + 9_999, 11, EVENT_T0 + 3_000, None),
        ):
            status, answer, _ = await get(key_url, as_of=str(as_of))
            assert status == 200, answer
            assert (answer["value"], answer["timestamp"], answer["valid_to"]) == (
                {"price": value},
                valid_from,
                valid_to,
            )
        status, answer, _ = await get(key_url, as_of=str(EVENT_T0 + 999))
        assert (status, answer["error"]) == (404, f"key 'p1' not found in store '{prices}'")
        too_old = EVENT_T0 + 3_000 - HISTORY_MS - 1
        status, answer, _ = await get(key_url, as_of=str(too_old))
        assert status == 404
        assert answer["error"] == (
            f"as_of={too_old} is older than the {HISTORY_MS} ms of history store {prices!r} "
            f"keeps (it goes back to {EVENT_T0 + 3_000 - HISTORY_MS})"
        )
    async with streamjoin.QueryClient(tables.urls) as client:
        answer = await client.get(prices, "p1", as_of_ms=EVENT_T0 + 1_500)
        assert (answer["value"], answer["valid_to"]) == ({"price": 10}, EVENT_T0 + 2_000)


async def test_as_of_is_for_versioned_tables_and_they_have_no_key_order(tables: Tables) -> None:
    url, orders, prices = tables.urls[0], tables.store("orders"), tables.store("prices")
    status, answer, _ = await get(f"{url}/stores/{orders}/keys/o1", as_of="1")
    assert (status, answer["error"]) == (
        400,
        f"as_of applies to versioned tables; store '{orders}' is a table",
    )
    status, answer, _ = await get(f"{url}/stores/{prices}/keys/p1", as_of="yesterday")
    assert (status, answer["error"]) == (
        400,
        "as_of='yesterday': give a time in epoch milliseconds",
    )
    status, answer, _ = await get(f"{url}/stores/{prices}/keys")
    assert (status, answer["error"]) == (
        400,
        f"store '{prices}' (versioned) is not ordered by key: ask one key",
    )


async def test_both_tables_of_a_foreign_key_join_answer_by_their_keys(tables: Tables) -> None:
    orders, customers = tables.store("orders"), tables.store("customers")
    forwarded = 0
    for url in tables.urls:
        for order, value in ORDERS.items():
            status, answer, _ = await get(f"{url}/stores/{orders}/keys/{order}")
            assert status == 200, answer
            assert (answer["value"], answer["role"]) == (value, "active")
            assert answer["partition"] == partition_for_key(order.encode(), PARTITIONS["orders"])
            forwarded += answer["served_by"] != url
        for customer, name in CUSTOMERS.items():
            status, answer, _ = await get(f"{url}/stores/{customers}/keys/{customer}")
            assert status == 200, answer
            assert answer["value"] == name
            partition = partition_for_key(customer.encode(), PARTITIONS["customers"])
            assert answer["partition"] == partition
    assert forwarded == len(ORDERS)  # each order asked of its owner and of the other worker
    status, answer, _ = await get(f"{tables.urls[1]}/stores/{orders}/keys", to="o3")
    assert status == 200, answer
    assert [(e["key"], e["value"]) for e in answer["entries"]] == [
        (k, ORDERS[k]) for k in ("o0", "o1", "o2")
    ]


async def test_a_global_table_is_answered_by_whichever_worker_is_asked(tables: Tables) -> None:
    countries = tables.store("countries")
    for index, url in enumerate(tables.urls):
        server = tables.workers[index].query_server()
        assert server is not None
        served, forwarded = server.stats.served, server.stats.forwarded
        for code, value in COUNTRIES.items():
            # As if forwarded by another member: a global table is answered here all the same.
            status, answer, _ = await get(f"{url}/stores/{countries}/keys/{code}", forwarded="1")
            assert status == 200, answer
            assert answer == {
                "store": countries,
                "key": code,
                "value": value,
                "partition": partition_for_key(code.encode(), PARTITIONS["countries"]),
                "served_by": url,
                "role": "global",
                "lag_records": 0,
                "lag_ms": 0,
            }
        assert (server.stats.served, server.stats.forwarded) == (served + 3, forwarded)
        status, answer, _ = await get(f"{url}/stores/{countries}/keys", **{"from": "c"})
        assert status == 200, answer
        assert [(e["key"], e["served_by"]) for e in answer["entries"]] == [
            ("fr", url),
            ("jp", url),
        ]
    status, answer, _ = await get(f"{tables.urls[0]}/stores/{countries}/keys/de")
    assert (status, answer["error"]) == (404, f"key 'de' not found in store '{countries}'")
    status, answer, _ = await get(f"{tables.urls[0]}/stores/{countries}/keys", limit="1")
    assert ([e["key"] for e in answer["entries"]], answer["truncated"]) == (["br"], True)
    status, answer, _ = await get(f"{tables.urls[0]}/stores/{countries}/partitions/0/keys")
    assert (status, answer["error"]) == (
        400,
        f"store '{countries}' is a global table, whole on every worker: ask "
        f"/stores/{countries}/keys",
    )


async def test_stores_lists_the_tables_and_the_global_one_as_global(tables: Tables) -> None:
    status, listing, _ = await get(f"{tables.urls[1]}/stores")
    assert status == 200
    kinds = {s["name"]: (s["kind"], s["partitions"]) for s in listing["stores"]}
    assert kinds == {
        tables.store("prices"): ("versioned", PARTITIONS["prices"]),
        tables.store("orders"): ("table", PARTITIONS["orders"]),
        tables.store("customers"): ("table", PARTITIONS["customers"]),
        tables.store("countries"): ("global", PARTITIONS["countries"]),
    }
    countries = next(s for s in listing["stores"] if s["kind"] == "global")
    assert "tasks" not in countries


async def test_the_query_command_reads_a_versioned_table_as_of_a_time(tables: Tables) -> None:
    prices = tables.store("prices")
    endpoint = tables.urls[1].removeprefix("http://")
    env = {"STREAMJOIN_TEST_SUFFIX": tables.suffix}
    command = ["query", "query_tables_app:joins", prices, "p1", "--endpoint", endpoint]
    command += ["--app-dir", str(APP_DIR)]
    done = await _run([*command, "--as-of", str(EVENT_T0 + 2_500)], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{prices} p1 = {json.dumps({'price': 12})}"
    assert lines[2] == f"  valid from {EVENT_T0 + 2_000} to {EVENT_T0 + 3_000}"
    done = await _run([*command, "--format", "json"], env)
    assert json.loads(done.stdout)["valid_to"] is None
