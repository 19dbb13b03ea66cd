"""`spark-stream --available-now` against Spark batch backfill and one worker, on the same data in
the same run, on local[2].

Produces N impressions and N clicks (bench/backfill.py's data: one click per auction drawn at
random, 0-70 s after its impression) to Apache Kafka (the embedded broker with --kafka-source
python), then runs the join with its Python joiner:
  stream  - the spark-stream query (AvailableNow, Spark's Kafka connector unless
            --kafka-source python, at most --max-records-per-batch records per topic and
            micro-batch) from the topics to Parquet;
  batch   - `backfill` of the same join from the topics to Parquet, in the same session;
  worker  - `streamjoin worker` from the beginning until it has written as many records.
The two Spark legs are taken in turns --rounds times in one session (the machine may be busy:
medians), after --warmup untimed rounds. Prints input records/s (2N / time), the peak RSS and
the machine's load average after each leg (the Spark legs share one process tree: a leg's peak
includes what the JVM kept from the other), where the stream's time went by Spark's progress
reports (durationMs and the join's state store times, summed over its
micro-batches), and the ratio of the median stream and batch times.

    python bench/spark_stream.py [--records 300000] [--partitions 4] [--rounds 3] [--warmup 1]
        [--skip-worker]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from backfill import peak_rss, produce, worker_leg  # noqa: E402


@dataclass
class Leg:
    """One engine's rounds: seconds and peak RSS of each."""

    seconds: list[float] = field(default_factory=list)
    peaks: list[int] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def peak(self) -> int:
        return max(self.peaks)


def _stream_round(  # noqa: PLR0917 - one round's session, join, source, place and size
    spark: Any, app: Any, spec: Any, source: Any, out: str, records: int, *, leg: Leg
) -> tuple[int, list[Any]]:
    """One spark-stream run over a fresh checkpoint: (rows written, progress reports)."""
    from streamjoin.spark.streaming import StreamTarget, Trigger, start_stream

    with peak_rss(os.getpid()) as peak:
        t0 = time.monotonic()
        target = StreamTarget(f"{out}/checkpoint", f"{out}/stream")
        query = start_stream(spark, app, spec, source, target, Trigger(available_now=True))
        query.awaitTermination()
        seconds = time.monotonic() - t0
    leg.seconds.append(seconds)
    leg.peaks.append(peak[0])
    count = int(spark.read.parquet(f"{out}/stream").count())
    progress = query.recentProgress
    read = sum(int(p["numInputRows"]) for p in progress)
    print(
        f"stream  {count:>9} joined in {seconds:6.1f} s  {2 * records / seconds:>9,.0f} "
        f"input records/s  ({len(progress)} micro-batches, {read} rows read)  "
        f"peak RSS {peak[0] / 2**20:,.0f} MiB  load {os.getloadavg()[0]:.1f}"
    )
    return count, progress


def _batch_round(  # noqa: PLR0917 - one round's session, join, source, place and size
    spark: Any, app: Any, spec: Any, bootstrap: str, out: str, records: int, *, leg: Leg
) -> int:
    from streamjoin.spark.backfill import backfill
    from streamjoin.spark.inputs import Sources

    with peak_rss(os.getpid()) as peak:
        t0 = time.monotonic()
        backfill(spark, app, [spec], Sources(bootstrap)).records(spec).write.parquet(f"{out}/batch")
        seconds = time.monotonic() - t0
    leg.seconds.append(seconds)
    leg.peaks.append(peak[0])
    count = int(spark.read.parquet(f"{out}/batch").count())
    print(
        f"batch   {count:>9} joined in {seconds:6.1f} s  {2 * records / seconds:>9,.0f} "
        f"input records/s  peak RSS {peak[0] / 2**20:,.0f} MiB  load {os.getloadavg()[0]:.1f}"
    )
    return count


def _durations(progress: list[Any]) -> str:
    """Where a stream round's time went, summed over its micro-batches: Spark's durationMs, and
    the join's state store work (summed over its tasks, which run in parallel)."""
    totals: dict[str, int] = {}
    for report in progress:
        for part, ms in (report.get("durationMs") or {}).items():
            totals[part] = totals.get(part, 0) + int(ms)
        for operator in report.get("stateOperators") or []:
            for part in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs"):
                name = "state " + part.removesuffix("TimeMs")
                totals[name] = totals.get(name, 0) + int(operator.get(part) or 0)
    return ", ".join(f"{part} {ms / 1000:.1f} s" for part, ms in sorted(totals.items()))


def spark_legs(
    bootstrap: str,
    records: int,
    *,
    official: bool,
    max_records_per_batch: int | None,
    rounds: int,
    warmup: int,
) -> tuple[int, Leg, Leg]:
    """(joined records, stream leg, batch leg), the legs taken in turns `rounds` times after
    `warmup` untimed rounds (the first query of a session pays for loading the streaming
    engine and the Kafka connector, which the legs after it find loaded)."""
    from backfill_app import app

    from streamjoin.spark.connector import session_settings
    from streamjoin.spark.session import spark_session, unload_state_stores
    from streamjoin.spark.streaming import StreamSource

    spec = app.get_join("attribute")
    settings = session_settings("local[2]") if official else {}
    source = StreamSource(bootstrap, official, max_records_per_batch)
    stream, batch = Leg(), Leg()
    started = time.monotonic()
    with spark_session("local[2]", settings) as spark:
        spark.range(1).count()
        print(f"spark   session up in {time.monotonic() - started:.1f} s")
        for round_ in range(warmup + rounds):
            if round_ < warmup:
                print("warm-up (left out of the medians):")
            timed = round_ >= warmup
            with tempfile.TemporaryDirectory() as out:
                stream_count, progress = _stream_round(
                    spark, app, spec, source, out, records, leg=stream if timed else Leg()
                )
                print(f"        micro-batch time: {_durations(progress)}")
                # The stopped query's state (600k rows at 300k records) would stay loaded
                # until Spark's maintenance thread (every minute) unloads it: in a 1 GiB
                # driver, rounds that follow at once ran out of heap on a quiet machine.
                unload_state_stores(spark)
                batch_count = _batch_round(
                    spark, app, spec, bootstrap, out, records, leg=batch if timed else Leg()
                )
            if stream_count != batch_count:
                print(f"DIFFERENT COUNTS: stream {stream_count}, batch {batch_count}")
    return batch_count, stream, batch


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=300_000, help="impressions, and clicks")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--kafka-source", choices=("kafka", "python"), default="kafka")
    parser.add_argument("--max-records-per-batch", type=int, default=None)
    parser.add_argument("--skip-worker", action="store_true")
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed rounds first (the session's first use)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="stream and batch legs, taken in turns (medians)"
    )
    args = parser.parse_args()
    suffix = uuid.uuid4().hex[:8]
    os.environ["BENCH_SUFFIX"] = suffix
    from backfill_app import app

    from streamjoin.broker import EmbeddedBroker, KafkaBroker
    from streamjoin.kafka.topics import TopicSpec, ensure_topics

    spec = app.get_join("attribute")
    # Spark's connector plans with ListOffsets, which the embedded broker answers wrongly after
    # batched produces (docs/broker-facts.md): the connector leg needs Apache Kafka.
    official = args.kafka_source == "kafka"
    with KafkaBroker() if official else EmbeddedBroker() as broker:
        topics = [*spec.input_topics, spec.into.name]
        asyncio.run(
            ensure_topics(broker.bootstrap, [TopicSpec(t, args.partitions) for t in topics])
        )
        t0 = time.monotonic()
        asyncio.run(produce(broker.bootstrap, *spec.input_topics, args.records))
        print(f"produced {2 * args.records:,} records in {time.monotonic() - t0:.1f} s")
        count, stream, batch = spark_legs(
            broker.bootstrap,
            args.records,
            official=official,
            max_records_per_batch=args.max_records_per_batch,
            rounds=args.rounds,
            warmup=args.warmup,
        )
        print(
            f"median  stream {stream.median_s:.1f} s, batch {batch.median_s:.1f} s "
            f"over {args.rounds} rounds"
        )
        per_round = [s / b for s, b in zip(stream.seconds, batch.seconds, strict=True)]
        print(
            f"ratio   stream/batch time {stream.median_s / batch.median_s:.2f}x of the medians, "
            f"{statistics.median(per_round):.2f}x the median of the rounds' "
            f"({', '.join(f'{r:.2f}' for r in per_round)}) (goal: within 2x); "
            f"peak RSS stream/batch {stream.peak / max(1, batch.peak):.2f}x"
        )
        if not args.skip_worker:
            _, worker_s, _ = worker_leg(
                broker.bootstrap, suffix, args.partitions, args.records, count
            )
            print(f"ratio   stream/worker time {stream.median_s / worker_s:.2f}x")


if __name__ == "__main__":
    main()
