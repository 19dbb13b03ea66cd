"""Run the shared join cases (join_cases.py) through each engine and reduce every output record
to one comparable tuple: (join, key, left id, right id, sum, timestamp, left source, right
source)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from join_cases import CASES, JOINERS, build_app, join_name
from pyspark.sql import SparkSession

from streamjoin.dsl.app import App
from streamjoin.dsl.topology import subtopology_groups
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.lifetime import die_with_parent
from streamjoin.runtime.tasks.output_writer import LEFT_SOURCE_HEADER, RIGHT_SOURCE_HEADER
from streamjoin.spark.graph import AppJob
from streamjoin.spark.records import ARROW_RECORD_SCHEMA
from streamjoin.testing import TestDriver

HERE = Path(__file__).resolve().parent

Result = tuple[str, str | None, Any, Any, Any, int, str | None, str | None]
Results = Counter[Result]


def result_of(
    join: str, key: bytes | str | None, value: Any, ts: int, headers: dict[str, bytes]
) -> Result:
    if isinstance(value, bytes | bytearray):
        value = json.loads(value)
    if isinstance(key, bytes | bytearray):
        key = key.decode()
    left = headers.get(LEFT_SOURCE_HEADER)
    right = headers.get(RIGHT_SOURCE_HEADER)
    return (
        join,
        key,
        value["l"],
        value["r"],
        value["sum"],
        ts,
        left.decode() if left else None,
        right.decode() if right else None,
    )


def by_join(results: Iterable[Result]) -> dict[str, Results]:
    grouped: dict[str, Results] = {}
    for result in results:
        grouped.setdefault(result[0], Counter())[result] += 1
    return grouped


def run_driver(app: App, suffix: str) -> dict[str, Results]:
    found: list[Result] = []
    with TestDriver(app) as driver:
        for case in CASES:
            for record in case.all_records:
                driver.pipe(
                    case.topic(record.side, suffix),
                    record.value,
                    key=record.key,
                    timestamp=record.ts,
                )
            for joiner in JOINERS:
                for r in driver.read_output(case.output(joiner, suffix)):
                    found.append(
                        result_of(join_name(case, joiner), r.key, r.value, r.timestamp, r.headers)
                    )
    return by_join(found)


def write_archive(rows: list[tuple[Any, ...]], path: Path) -> str:
    """Records (RECORD_SCHEMA tuples) as a Parquet archive at `path`, written without Spark
    (quicker)."""
    columns = list(zip(*rows, strict=True))
    table = pa.Table.from_arrays(
        [pa.array(c, f.type) for c, f in zip(columns, ARROW_RECORD_SCHEMA, strict=True)],
        schema=ARROW_RECORD_SCHEMA,
    )
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet")
    return str(path)


def case_archive(suffix: str, path: Path) -> dict[str, str]:
    """Every case's records in one archive, with offsets as Kafka would give them: topic ->
    the archive's path."""
    rows = []
    for case in CASES:
        offsets = {"L": 0, "R": 0}
        for record in case.all_records:
            key = None if record.key is None else record.key.encode()
            value = json.dumps(record.value).encode()
            topic = case.topic(record.side, suffix)
            rows.append((key, value, topic, 0, offsets[record.side], record.ts, []))
            offsets[record.side] += 1
    archived = write_archive(rows, path)
    return {row[2]: archived for row in rows}


def run_spark(app: App, job: AppJob) -> dict[str, Results]:
    """Every join of the app's job, as results."""
    frames = [job.output(spec).selectExpr(f"'{spec.name}' as join", "*") for spec in app.joins]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return by_join(
        result_of(
            row["join"],
            row["key"],
            row["value"],
            row["timestamp"],
            {h["key"]: bytes(h["value"]) for h in row["headers"]},
        )
        for row in union.collect()
    )


async def produce_cases(bootstrap: str, suffix: str) -> None:
    """Each case's records one at a time, in table order."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for case in CASES:
            for record in case.all_records:
                await producer.send_and_wait(
                    case.topic(record.side, suffix),
                    json.dumps(record.value).encode(),
                    key=None if record.key is None else record.key.encode(),
                    partition=0,
                    timestamp_ms=record.ts,
                )
    finally:
        await producer.stop()


async def cases_in_topics(bootstrap: str, suffix: str) -> None:
    """Every case's topics (one partition each), its records produced in table order."""
    app = build_app(suffix)
    topics = {t for spec in app.joins for t in (*spec.input_topics, spec.into.name)}
    await ensure_topics(bootstrap, [TopicSpec(t, 1) for t in sorted(topics)])
    await produce_cases(bootstrap, suffix)


async def read_outputs(
    bootstrap: str, suffix: str, want: int, within_s: float
) -> dict[str, Results]:
    """Every record of every case's output topics, once `want` have arrived (or time is up)
    and a little longer, so that extra records would be seen too."""
    topics = {
        case.output(joiner, suffix): join_name(case, joiner) for case in CASES for joiner in JOINERS
    }
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[Result] = []
    try:
        partitions = [TopicPartition(topic, 0) for topic in topics]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + within_s
        settle_until: float | None = None
        while time.monotonic() < (settle_until or deadline):
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                for r in records:
                    found.append(
                        result_of(topics[tp.topic], r.key, r.value, r.timestamp, dict(r.headers))
                    )
            if settle_until is None and len(found) >= want:
                settle_until = time.monotonic() + 1.5
    finally:
        await consumer.stop()
    return by_join(found)


def pairs(results: Results) -> set[tuple[Any, Any]]:
    return {(r[2], r[3]) for r in results} - {("close-l", "close-r")}


def start_worker(bootstrap: str, suffix: str, tmp: Path, log: Path) -> subprocess.Popen[bytes]:
    """`streamjoin worker join_cases:app` as its own process, as users run it."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamjoin",
                "worker",
                "join_cases:app",
                "--app-dir",
                str(HERE),
                "--bootstrap",
                bootstrap,
                "--state-dir",
                str(tmp / "state"),
                "--commit-interval",
                "0.5",
                "--session-timeout",
                "6",
            ],
            env={**os.environ, "STREAMJOIN_TEST_SUFFIX": suffix},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # noqa: PLW1509
        )


def stop_worker(worker: subprocess.Popen[bytes]) -> int:
    worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(30)
    except subprocess.TimeoutExpired:
        worker.kill()
        return worker.wait()


def log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def running_tasks(log: Path) -> int:
    return log.read_text(errors="replace").count(" is running")


async def wait_until_running(
    worker: subprocess.Popen[bytes], log: Path, tasks: int, within_s: float
) -> None:
    deadline = time.monotonic() + within_s
    while running_tasks(log) < tasks:
        assert worker.poll() is None, f"the worker exited:\n{log_tail(log)}"
        assert time.monotonic() < deadline, log_tail(log)
        await asyncio.sleep(0.2)


@dataclass(frozen=True, slots=True)
class WorkerRun:
    suffix: str
    bootstrap: str
    written: dict[str, Results]
    exit_code: int
    log_tail: str


async def run_worker(bootstrap: str, suffix: str, tmp: Path) -> WorkerRun:
    """Every case through one `streamjoin worker` process, which is stopped (and so has
    committed everything) when this returns.

    The records are produced one at a time in table order once every task runs, so the worker
    takes them in the order the driver does whatever its fetch timing.
    """
    app = build_app(suffix)
    want = sum(c.total() for c in run_driver(app, suffix).values())
    topics = {
        t: TopicSpec(t, 1) for spec in app.joins for t in (*spec.input_topics, spec.into.name)
    }
    await ensure_topics(bootstrap, topics.values())
    log = tmp / "worker.log"
    worker = start_worker(bootstrap, suffix, tmp, log)
    try:
        # A case's two joins read its two topics: one sub-topology, one task.
        await wait_until_running(worker, log, len(subtopology_groups(app)), within_s=60)
        await produce_cases(bootstrap, suffix)
        written = await read_outputs(bootstrap, suffix, want, within_s=60)
    finally:
        code = stop_worker(worker)
    return WorkerRun(suffix, bootstrap, written, code, log_tail(log))


def parquet_results(spark: SparkSession, join: str, path: str) -> Results:
    """The records of a Parquet output (backfill's or spark-stream's layout) as results."""
    return by_join(
        result_of(
            join,
            row["key"],
            row["value"],
            row["timestamp"],
            {h["key"]: bytes(h["value"]) for h in row["headers"]},
        )
        for row in spark.read.parquet(path).collect()
    ).get(join, Counter())


def run_spark_stream(
    spark: SparkSession,
    bootstrap: str,
    suffix: str,
    tmp: Path,
    *,
    official: bool,
    joiners: Iterable[str] = JOINERS,
    cases: Iterable[str] | None = None,
    max_records_per_batch: int | None = None,
    parallel: int = 1,
) -> dict[str, Results]:
    """Each case's join (of `cases`, all by default; with `joiners`) as a streaming query with
    the AvailableNow trigger, `parallel` at a time; the inputs must be in the topics. The
    function joiners produce to their output topics, the field mappings write Parquet.

    Spark starts a Python process for each Python source and each Python write of a query,
    which must connect back within 10 s (PythonWorkerFactory's fixed timeout): several starting
    at once on a busy machine miss that, so Python sources run one query at a time."""
    from streamjoin.spark.streaming import StreamSource, StreamTarget, Trigger, start_stream

    app = build_app(suffix)
    source = StreamSource(bootstrap, official, max_records_per_batch)
    chosen = {case.name for case in CASES} if cases is None else set(cases)
    specs = [
        spec
        for spec in app.joins
        if spec.name.rsplit("_", 1)[0] in chosen and spec.name.rsplit("_", 1)[1] in set(joiners)
    ]
    parquet = {s.name: str(tmp / s.name) for s in specs if s.name.endswith("_map")}
    for first in range(0, len(specs), parallel):
        queries = [
            start_stream(
                spark,
                app,
                spec,
                source,
                StreamTarget(str(tmp / f"{spec.name}.checkpoint"), parquet.get(spec.name)),
                Trigger(available_now=True),
            )
            for spec in specs[first : first + parallel]
        ]
        for query in queries:
            query.awaitTermination()
            failure = query.exception()
            assert failure is None, failure
    results = {name: parquet_results(spark, name, path) for name, path in parquet.items()}
    to_topics = {s.name for s in specs} - set(parquet)
    if to_topics:
        expected = run_driver(app, suffix)
        want = sum(expected[name].total() for name in to_topics)
        found = asyncio.run(read_outputs(bootstrap, suffix, want, within_s=60))
        results.update({name: found.get(name, Counter()) for name in to_topics})
    return results
