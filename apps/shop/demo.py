"""The shop demo: re-keyed and chained joins while workers come and go.

Starts the embedded broker (unless --bootstrap is given), creates the input topics with three
different partition counts (orders 6, payments 4, shipments 3: only the repartition topics
make the joins' inputs co-partitioned), prints the topology (`streamjoin describe`), starts two
workers (`streamjoin worker app:joins`), produces orders, payments and shipments - each keyed
by its own id - at a steady rate, adds a third worker, stops the first, and checks that every
order that was paid and shipped came out of the chained join. Before the workers start it
fills the global table of countries (2 partitions); every shipped order is located through
it, and `located: expected=E present=P wrong=W` checks each one's region. Along with the
traffic it fills the two tables of a foreign-key join, the order book (6 partitions: the same
orders, 1 in 40 later moved to another customer) and the customers (3 partitions, 1 in 8 later
changing tier), and `customers: expected=E present=P wrong=W` checks that the latest result
per order is the join of the final tables. The last line is the verification:
`joined: expected=E present=P duplicates=D`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition
from rich.console import Console

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "ads")]

from app import joins  # noqa: E402 - the app's modules live here
from shop_data import (  # noqa: E402
    COUNTRIES,
    CUSTOMERS,
    ORDER_BOOK,
    Country,
    Event,
    Order,
    Payment,
    Row,
    encode,
    expected_order_customers,
    generate_shop,
    generate_tables,
    key_of,
)
from workers import WorkerProcess, totals  # noqa: E402 - the ad demo's worker launcher

from streamjoin.broker import EmbeddedBroker  # noqa: E402
from streamjoin.cli.describe import render  # noqa: E402
from streamjoin.dsl.topology import compile_topology  # noqa: E402
from streamjoin.kafka.security_config import connection_from_environment  # noqa: E402
from streamjoin.kafka.topics import TopicSpec, ensure_topics  # noqa: E402
from streamjoin.runtime.topology.description import describe_topology  # noqa: E402

LAYOUT = {"shop-orders": 6, "shop-payments": 4, "shop-shipments": 3, "shop-countries": 2}
TABLES = {ORDER_BOOK: 6, CUSTOMERS: 3}
OUTPUT = "shop-shipped"
LOCATED = "shop-located"
BILLED = "shop-order-customers"
console = Console(highlight=False)


def topic_of(record: Event) -> str:
    if isinstance(record, Row):
        return record.topic
    if isinstance(record, Order):
        return "shop-orders"
    return "shop-payments" if isinstance(record, Payment) else "shop-shipments"


async def produce_paced(bootstrap: str, events: list[Event], rate: float) -> int:
    """Send the events in time order at about `rate` records per second."""
    producer = connection_from_environment(bootstrap).producer(linger_ms=5)
    await producer.start()
    started = time.monotonic()
    try:
        for sent, record in enumerate(events, 1):
            await producer.send(
                topic_of(record),
                encode(record),
                key=key_of(record).encode(),
                timestamp_ms=record.timestamp_ms,
            )
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0.02:
                await asyncio.sleep(ahead)
        await producer.flush()
    finally:
        await producer.stop()
    return len(events)


async def produce_countries(bootstrap: str) -> None:
    """The global table, before any worker starts (each restores it before processing)."""
    producer = connection_from_environment(bootstrap).producer()
    await producer.start()
    try:
        for code, region in COUNTRIES.items():
            await producer.send("shop-countries", encode(Country(code, region)), key=code.encode())
        await producer.flush()
    finally:
        await producer.stop()


async def collect_output(
    bootstrap: str,
    expected: set[str],
    *,
    seen: Counter[str],
    located: dict[str, str | None],
    billed: dict[str, Any],
    expected_billed: dict[str, Any],
    done: asyncio.Event,
    stop: asyncio.Event,
) -> None:
    """Count shipped orders, note the regions of located ones and the latest bill per order as
    they arrive; `done` once every expected one is there and the bills are those expected."""
    consumer = connection_from_environment(bootstrap).consumer(enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [
            TopicPartition(t, p)
            for t in (OUTPUT, LOCATED, BILLED)
            for p in range(LAYOUT["shop-orders"])
        ]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while not stop.is_set():
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                for record in records:
                    if tp.topic == BILLED:
                        key = record.key.decode()
                        billed[key] = None if record.value is None else json.loads(record.value)
                        continue
                    value = json.loads(record.value)
                    if tp.topic == LOCATED:
                        located[value["order_id"]] = value["region"]
                    else:
                        seen[value["order_id"]] += 1
            if expected <= seen.keys() and expected <= located.keys() and billed == expected_billed:
                done.set()
    finally:
        await consumer.stop()


async def runs_tasks(worker: WorkerProcess, start: float, within_s: float) -> None:
    """Wait until `worker` runs tasks (its learners caught up and the follow-up handed them
    over), so that the next worker leaves a settled group."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        samples = await asyncio.to_thread(worker.samples)
        running = samples.get("streamjoin_tasks", {}).get('state="running"', 0)
        if running:
            console.print(
                f"{time.monotonic() - start:5.1f} s  {worker.name} runs {running:.0f} tasks"
            )
            return
    console.print(f"{time.monotonic() - start:5.1f} s  {worker.name} runs no task yet")


async def run(bootstrap: str, orders: int, rate: float, work_dir: Path) -> bool:
    # The outputs too, before anything reads them (a broker that creates topics on first use
    # would otherwise pick its own partition count).
    partitions = LAYOUT["shop-orders"]
    outputs = [TopicSpec(t, partitions) for t in ("shop-paid", OUTPUT, LOCATED, BILLED)]
    compacted = {"cleanup.policy": "compact"}
    await ensure_topics(
        connection_from_environment(bootstrap),
        [
            *(TopicSpec(t, n) for t, n in LAYOUT.items()),
            *(TopicSpec(t, n, compacted) for t, n in TABLES.items()),
            *outputs,
        ],
    )
    console.print(render(describe_topology(compile_topology(joins, LAYOUT | TABLES))))
    events, expected = generate_shop(orders)
    rows = generate_tables(events)
    expected_billed: dict[str, Any] = expected_order_customers(rows)
    console.print(
        f"{orders} orders, {len(events) - orders} payments and shipments, {len(expected)} "
        f"orders to ship, {len(rows)} order-book and customer updates, at ~{rate:,.0f} "
        f"records/s (~{(len(events) + len(rows)) / rate:.0f} s)"
    )
    events = sorted([*events, *rows], key=lambda e: e.timestamp_ms)
    await produce_countries(bootstrap)
    workers = [WorkerProcess(f"worker-{i}", bootstrap, work_dir, app_dir=HERE) for i in (1, 2, 3)]
    seen: Counter[str] = Counter()
    located: dict[str, str | None] = {}
    billed: dict[str, Any] = {}
    done, stop = asyncio.Event(), asyncio.Event()
    try:
        for worker in workers[:2]:
            worker.start()
        console.print("started worker-1 and worker-2")
        reader = asyncio.create_task(
            collect_output(
                bootstrap,
                expected,
                seen=seen,
                located=located,
                billed=billed,
                expected_billed=expected_billed,
                done=done,
                stop=stop,
            )
        )
        start = time.monotonic()
        producing = asyncio.create_task(produce_paced(bootstrap, events, rate))
        await asyncio.sleep(10)
        workers[2].start()
        console.print(f"{time.monotonic() - start:5.1f} s  worker-3 joins (scale-out)")
        await runs_tasks(workers[2], start, within_s=45)
        await asyncio.sleep(5)
        console.print(f"{time.monotonic() - start:5.1f} s  worker-1 leaves (scale-in)")
        await asyncio.to_thread(workers[0].stop)
        sent = await producing
        console.print(f"{time.monotonic() - start:5.1f} s  all {sent} records produced")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), 90)
        finished = time.monotonic()
        metrics = {w.name: totals(w.samples()) for w in workers if w.running}
        stop.set()
        await reader
    finally:
        for worker in workers:
            await asyncio.to_thread(worker.stop)
    console.print(f"output: {sum(seen.values())} shipped orders in {finished - start:.1f} s")

    def total(name: str) -> float:
        return sum(m.get(f"streamjoin_{name}", 0) for m in metrics.values())

    console.print(
        f"remaining workers: {total('records_rekeyed_total'):,.0f} records re-keyed, "
        f"{total('join_late_joined_total') + total('join_late_no_partner_total'):,.0f} late "
        f"records ({total('join_late_joined_total'):,.0f} joined), "
        f"{total('dead_letters_total'):,.0f} dead letters"
    )
    ok, lines = verify(
        events,
        expected,
        seen=seen,
        located=located,
        billed=billed,
        expected_billed=expected_billed,
    )
    if not ok:
        for worker in workers:
            console.print(f"[dim]--- {worker.name} log tail ---\n{worker.log_tail()}[/]")
    for line in lines:
        console.print(line)
    return ok


def verify(
    events: list[Event],
    expected: set[str],
    *,
    seen: Counter[str],
    located: dict[str, str | None],
    billed: dict[str, Any],
    expected_billed: dict[str, Any],
) -> tuple[bool, list[str]]:
    """Whether the outputs are those expected, and the verification lines that say so (the last
    one `joined: ...`)."""
    regions = {o.order_id: COUNTRIES.get(o.country) for o in events if isinstance(o, Order)}
    wrong = sum(1 for order, region in located.items() if regions.get(order, "?") != region)
    present_located = len(expected & located.keys())
    lines = [f"located: expected={len(expected)} present={present_located} wrong={wrong}"]
    bills = {order: bill for order, bill in billed.items() if bill is not None}
    present_billed = len(bills.keys() & expected_billed.keys())
    wrong_billed = sum(1 for order, bill in bills.items() if expected_billed.get(order) != bill)
    lines.append(
        f"customers: expected={len(expected_billed)} present={present_billed} wrong={wrong_billed}"
    )
    present = len(expected & seen.keys())
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    lines.append(f"joined: expected={len(expected)} present={present} duplicates={duplicates}")
    ok = present == len(expected) and not seen.keys() - expected
    ok = ok and located.keys() == expected and not wrong
    return ok and present_billed == len(expected_billed) and not wrong_billed, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this Kafka broker instead of starting one")
    parser.add_argument("--orders", type=int, default=12_000)
    parser.add_argument("--rate", type=float, default=950, help="records per second")
    args = parser.parse_args()
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if bootstrap is None:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap
            console.print(f"embedded broker on {bootstrap} (data in memory only)")
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="streamjoin-shop-")))
        ok = asyncio.run(run(bootstrap, args.orders, args.rate, work_dir))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
