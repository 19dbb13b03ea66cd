"""A plain asyncio application on streamjoin's CooperativeConsumer.

Run `python apps/cooperative_consumer.py --topic orders --group billing` twice against your
broker (default localhost:9092) and watch the second instance take over some partitions while
the first keeps consuming the rest: only the partitions that move are revoked.

`--demo` runs the whole story alone: it creates the topic, produces in the background, starts
one consumer, then a second one, and stops once both own partitions and each has consumed
records. Without `--bootstrap` it starts the embedded broker for that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging

from aiokafka import AIOKafkaProducer

from streamjoin.assignment.model import TopicPartition
from streamjoin.broker import EmbeddedBroker
from streamjoin.group import CooperativeConsumer, RebalanceListener
from streamjoin.kafka.topics import TopicSpec, ensure_topics


class Announce(RebalanceListener):
    """Prints what this instance owns; a real application would flush its work in on_revoked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.owns_partitions = asyncio.Event()

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        if partitions:
            print(f"[{self.name}] assigned {sorted(tp.partition for tp in partitions)}")
            self.owns_partitions.set()

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        print(f"[{self.name}] revoked {sorted(tp.partition for tp in partitions)}")

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        print(f"[{self.name}] lost {sorted(tp.partition for tp in partitions)}")


def make_consumer(
    listener: RebalanceListener, bootstrap: str, topic: str, group: str
) -> CooperativeConsumer:
    return CooperativeConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        assignors=["cooperative-sticky"],
        listener=listener,
        auto_offset_reset="earliest",
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
    )


async def consume_forever(bootstrap: str, topic: str, group: str) -> None:
    async with make_consumer(Announce("consumer"), bootstrap, topic, group) as consumer:
        async for record in consumer:
            print(f"{record.topic}[{record.partition}]@{record.offset}: {record.value!r}")


async def count(
    consumer: CooperativeConsumer, consumed: list[int], got_records: asyncio.Event
) -> None:
    while True:
        batch = await consumer.getmany(timeout_ms=200)
        consumed.append(sum(len(records) for records in batch.values()))
        if sum(consumed):
            got_records.set()


async def demo(bootstrap: str, topic: str, group: str) -> None:
    await ensure_topics(bootstrap, [TopicSpec(topic, 6)])
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()

    async def produce() -> None:
        n = 0
        while True:
            await producer.send_and_wait(topic, f"order {n}".encode(), partition=n % 6)
            n += 1
            await asyncio.sleep(0.01)

    announcers = [Announce("first"), Announce("second")]
    consumed: list[list[int]] = [[], []]
    got_records = [asyncio.Event(), asyncio.Event()]
    consumers: list[CooperativeConsumer] = []
    tasks = [asyncio.create_task(produce())]
    try:
        for i, announce in enumerate(announcers):  # the second joins once the first owns all
            consumers.append(make_consumer(announce, bootstrap, topic, group))
            await consumers[i].start()
            tasks.append(asyncio.create_task(count(consumers[i], consumed[i], got_records[i])))
            await announce.owns_partitions.wait()
            await got_records[i].wait()
        print(f"records consumed: first {sum(consumed[0])}, second {sum(consumed[1])}")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for consumer in consumers:
            await consumer.stop()
        await producer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="HOST:PORT (default localhost:9092)")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="cooperative-demo")
    parser.add_argument("--demo", action="store_true", help="run alone on the embedded broker")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(KeyboardInterrupt):
        if args.demo and args.bootstrap is None:
            with EmbeddedBroker() as broker:
                asyncio.run(demo(broker.bootstrap, args.topic, args.group))
        elif args.demo:
            asyncio.run(demo(args.bootstrap, args.topic, args.group))
        else:
            asyncio.run(consume_forever(args.bootstrap or "localhost:9092", args.topic, args.group))


if __name__ == "__main__":
    main()
