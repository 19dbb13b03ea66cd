"""The contenders the throughput benches time, and how: the ad join's traffic produced to a topic
set per contender and round (`topic_sets`), the aiokafka consume -> produce pipe that is their
baseline (`pipe`), the worker's command line (`worker_command`), a contender process timed from
the "done" line it prints (`timed_process`, with its peak RSS), and what each returns
(`Outcome`). bench/join_throughput.py, eos_throughput.py, rekey_throughput.py, table_join.py,
scale.py, brokers.py, live_latency.py and vs_kafka_streams.py share them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ads_join import Click, Impression, generate_traffic, topic_names
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from produce import produce_all
from runner_process import rss_bytes, terminate

from streamjoin.dsl.serdes import serde_for
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 900.0
SETTLE_S = 3.0
"""Pause before each contender, for the broker to finish what the one before left it."""


@dataclass
class Outcome:
    name: str
    records: int
    seconds: float
    cpu_seconds: float | None
    out: int | str
    longest_stall: float | None = None
    """Longest the contender's event loop ran late (the worker reports it)."""
    threads: dict[str, float] | None = None
    """CPU seconds by thread over the whole process (the worker reports it)."""
    build: str | None = None
    """Whether the per-record path ran compiled (the worker reports it)."""
    peak_rss: int | None = None
    """The process's peak resident memory in bytes (read from /proc for any contender run by
    `timed_process`, else as the worker reports it)."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds


async def produce(bootstrap: str, prefixes: list[str], impressions: int) -> int:
    """The same traffic, in time order, to every prefix's input topics; returns records per set."""
    traffic = generate_traffic(impressions)
    records = [
        (isinstance(r, Click), r.auction_id.encode(), r.encode(), r.timestamp_ms)
        for r in traffic.in_time_order()
    ]
    for prefix in prefixes:
        imp, clk, _ = topic_names(prefix)
        await produce_all(
            bootstrap, ((clk if is_click else imp, *rest) for is_click, *rest in records)
        )
    return len(records)


async def topic_sets(
    bootstrap: str,
    tag: str,
    names: Sequence[str],
    *,
    rounds: int,
    partitions: int,
    impressions: int,
) -> tuple[dict[tuple[str, int], str], int]:
    """A topic set (ads_join.topic_names) per name and round, each holding the same traffic:
    (prefix by (name, round), records in each set)."""
    run = uuid.uuid4().hex[:6]
    prefixes = {(c, n): f"{tag}-{run}-{c[:4]}{n}" for c in names for n in range(rounds)}
    await ensure_topics(
        bootstrap, [TopicSpec(t, partitions) for p in prefixes.values() for t in topic_names(p)]
    )
    return prefixes, await produce(bootstrap, list(prefixes.values()), impressions)


async def pipe(
    bootstrap: str, prefix: str, partitions: int, records: int, *, transcode: bool = False
) -> Outcome:
    """(a) consume -> produce: every input record copied to the output, same partition;
    `transcode`: each value decoded into its record type and encoded again on the way."""
    imp, clk, out = topic_names(prefix)
    serdes = {imp: serde_for(Impression), clk: serde_for(Click)}
    if transcode:
        out += "-transcoded"  # created by run()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=256 * 1024
    )
    await consumer.start()
    await producer.start()
    try:
        tps = [TopicPartition(t, p) for t in (imp, clk) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        seen, started, cpu = 0, 0.0, 0.0
        deliveries = []
        while seen < records:
            batch = await consumer.getmany(timeout_ms=100, max_records=5_000)
            if batch and not seen:
                started, cpu = time.perf_counter(), time.process_time()
            for tp, fetched in batch.items():
                seen += len(fetched)
                serde = serdes[tp.topic]
                for r in fetched:
                    value = serde.serialize(serde.deserialize(r.value)) if transcode else r.value
                    deliveries.append(
                        await producer.send(
                            out,
                            value,
                            key=r.key,
                            partition=tp.partition,
                            timestamp_ms=r.timestamp,
                        )
                    )
            if len(deliveries) >= 10_000:
                await asyncio.gather(*deliveries)
                deliveries.clear()
        await asyncio.gather(*deliveries)
        return Outcome(
            "pipe+serde" if transcode else "pipe (a)",
            seen,
            time.perf_counter() - started,
            time.process_time() - cpu,
            seen,
        )
    finally:
        await producer.stop()
        await consumer.stop()


async def timed_process(
    name: str, command: list[str], env: dict[str, str], log: Path, *, exits: bool = False
) -> Outcome:
    """Run `command` until it reports {"event": "done", "first", "cpu_s", ...} on stdout;
    `exits`: it then exits by itself (let it, so that a py-spy wrapper writes its profile)."""
    with log.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env={**os.environ, **env},
            preexec_fn=die_with_parent,
        )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while True:
                line = await process.stdout.readline()
                if not line:
                    tail = (await asyncio.to_thread(log.read_text, errors="replace")).splitlines()
                    raise RuntimeError(f"{name} exited early:\n" + "\n".join(tail[-15:]))
                with contextlib.suppress(ValueError):
                    done = json.loads(line)
                    if isinstance(done, dict) and done.get("event") == "done":
                        break
        peak = rss_bytes(process.pid, "VmHWM")
    finally:
        if exits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 60)
        await terminate(process)
    return Outcome(
        name,
        done["records_in"],
        done["t"] - done["first"],
        done["cpu_s"],
        done["out"],
        done.get("longest_stall"),
        done.get("threads"),
        done.get("build"),
        peak or done.get("peak_rss"),
    )


def worker_command(
    prefix: str,
    bootstrap: str,
    state: Path,
    records: int | None,
    profile: str | None,
    *,
    unbounded: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The worker's command line; `records`: it stops after that many (None: it runs until
    stopped); `profile`: under py-spy, writing its raw stacks there; `unbounded`: with the
    memory settings from before the budget; `extra`: further worker_runner.py options."""
    command = [
        sys.executable,
        str(HERE / "worker_runner.py"),
        prefix,
        "--bootstrap",
        bootstrap,
        "--state-dir",
        str(state),
        *([] if records is None else ["--until-records", str(records)]),
        *(["--unbounded"] if unbounded else []),
        *extra,
    ]
    if profile is None:
        return command
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    spy = [py_spy, "record", "--nonblocking", "--rate", "250", "-f", "raw", "-o", profile]
    return [*spy, "--", *command]


def median_round(outcomes: list[Outcome]) -> Outcome:
    """The round in the middle by records/s (the higher of two middles)."""
    return sorted(outcomes, key=lambda o: o.rate)[len(outcomes) // 2]


def cpu_per_record(outcome: Outcome) -> float:
    return (outcome.cpu_seconds or 0.0) / outcome.records
