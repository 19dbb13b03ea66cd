"""What a window changelog costs now that its records carry the time they were logged (so the
broker's time-based retention keeps them whatever their event times), on Apache Kafka.

Two tasks' window stores (retention 65 s, as the ads join) get the same puts, spread over
--span-s seconds of event time and flushed every --flush puts (a commit):
  history - event times 30 days back, older than the changelog's retention.ms (store + 1 day);
  recent  - event times ending now, as live traffic (or a replay of the last day) has.
Then each task is restored into an empty directory. Per case it prints: changelog records per
put (write amplification), bytes on the broker's disk per record, records restored against
records the store holds (its last 65 s of event time), and the restore's time. That the history
survives the cleaner is tested (tests/runtime/e2e/test_changelog_history.py), not timed here.

    python bench/changelog_history.py [--puts 100000] [--span-s 3600] [--flush 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from aiokafka import AIOKafkaProducer, TopicPartition

from streamjoin.broker import KafkaBroker
from streamjoin.kafka.watermarks import log_bounds
from streamjoin.state import (
    RestoreCompleted,
    StateEvent,
    StateManager,
    StoreSpec,
    TaskSpec,
    changelog_topic,
)

APP, RETENTION_MS, DAY_MS = "bench-history", 65_000, 86_400_000
VALUE = b'{"campaign":"spring-sale","user_id":"user-01234"}'


async def fill(
    bootstrap: str, state_dir: Path, store: StoreSpec, stamps: list[int], flush: int
) -> None:
    """Put one record per stamp (keys cycle over 10,000 auctions) and commit every `flush`."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    manager = StateManager(state_dir=state_dir, app_id=APP, bootstrap=bootstrap, producer=producer)
    await manager.start()
    try:
        task = await manager.open_active(TaskSpec("0_0", 0, 1, (store,)))
        await task.wait_ready()
        window = task.window(store.name)
        for i, stamp in enumerate(stamps, 1):
            window.put(b"auction-%05d" % (i % 10_000), stamp, VALUE)
            if i % flush == 0:
                await manager.commit()
        await manager.commit()
    finally:
        await manager.close()
        await producer.stop()


async def restore(bootstrap: str, state_dir: Path, store: StoreSpec) -> RestoreCompleted:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    manager = StateManager(state_dir=state_dir, app_id=APP, bootstrap=bootstrap, producer=producer)
    done: list[RestoreCompleted] = []

    def on_event(event: StateEvent) -> None:
        if isinstance(event, RestoreCompleted):
            done.append(event)

    manager.subscribe(on_event)
    await manager.start()
    try:
        task = await manager.open_active(TaskSpec("0_0", 0, 1, (store,)))
        await task.wait_ready()
    finally:
        await manager.close()
        await producer.stop()
    return done[0]


async def run(broker: KafkaBroker, puts: int, span_ms: int, flush: int, work: Path) -> None:
    bootstrap = broker.bootstrap
    now = int(time.time() * 1000)
    print(
        f"{puts:,} puts over {span_ms / 1000:,.0f} s of event time, a commit every {flush:,}; "
        f"store retention {RETENTION_MS / 1000:.0f} s, changelog retention.ms store + 1 day\n"
        f"{'case':<9}{'logged/put':>11}{'bytes/rec':>10}{'restored':>10}{'live':>8}"
        f"{'restore s':>11}"
    )
    for case, end in (("history", now - 30 * DAY_MS), ("recent", now)):
        store = StoreSpec.window(f"{case}-win", retention_ms=RETENTION_MS)
        stamps = [end - span_ms + i * span_ms // puts for i in range(puts)]
        await fill(bootstrap, work / f"{case}-writer", store, stamps, flush)
        topic = changelog_topic(APP, store.name)
        [bounds] = await log_bounds(bootstrap, [TopicPartition(topic, 0)])
        on_disk = sum(
            f.stat().st_size for f in (broker.directory / "logs").glob(f"{topic}-0/*.log")
        )
        restored = await restore(bootstrap, work / f"{case}-reader", store)
        live = sum(1 for stamp in stamps if stamp > stamps[-1] - RETENTION_MS)
        print(
            f"{case:<9}{bounds.end / puts:>11.2f}{on_disk / bounds.end:>10.1f}"
            f"{restored.restored:>10,}{live:>8,}{restored.seconds:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--puts", type=int, default=100_000)
    parser.add_argument("--span-s", type=int, default=3_600)
    parser.add_argument("--flush", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as work, KafkaBroker() as broker:
        print(f"{broker.name} on {broker.bootstrap}")
        asyncio.run(run(broker, args.puts, args.span_s * 1000, args.flush, Path(work)))


if __name__ == "__main__":
    main()
