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
Prints input records/s (2N / time) and the peak RSS of each (the Spark legs share one process
tree: the batch leg's peak includes what the JVM kept from the stream leg), and the ratio
stream/batch time.

    python bench/spark_stream.py [--records 300000] [--partitions 4] [--skip-worker]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from backfill import peak_rss, produce, worker_leg  # noqa: E402


def spark_legs(
    bootstrap: str, records: int, *, official: bool, max_records_per_batch: int | None
) -> tuple[int, float, int, float, int]:
    """(joined records, stream seconds, stream peak RSS, batch seconds, batch peak RSS)."""
    from backfill_app import app

    from streamjoin.spark.backfill import backfill
    from streamjoin.spark.connector import session_settings
    from streamjoin.spark.inputs import Sources
    from streamjoin.spark.session import spark_session
    from streamjoin.spark.streaming import StreamSource, StreamTarget, Trigger, start_stream

    spec = app.get_join("attribute")
    settings = session_settings("local[2]") if official else {}
    started = time.monotonic()
    with spark_session("local[2]", settings) as spark, tempfile.TemporaryDirectory() as out:
        spark.range(1).count()
        print(f"spark   session up in {time.monotonic() - started:.1f} s")
        with peak_rss(os.getpid()) as stream_peak:
            t0 = time.monotonic()
            source = StreamSource(bootstrap, official, max_records_per_batch)
            target = StreamTarget(f"{out}/checkpoint", f"{out}/stream")
            query = start_stream(spark, spec, source, target, Trigger(available_now=True))
            query.awaitTermination()
            stream_s = time.monotonic() - t0
        batches = len(query.recentProgress)
        read = sum(int(p["numInputRows"]) for p in query.recentProgress)
        stream_count = spark.read.parquet(f"{out}/stream").count()
        print(
            f"stream  {stream_count:>9} joined in {stream_s:6.1f} s  "
            f"{2 * records / stream_s:>9,.0f} input records/s  ({batches} micro-batches, "
            f"{read} rows read, "
            f"{'connector' if official else 'python'} source)  "
            f"peak RSS {stream_peak[0] / 2**20:,.0f} MiB"
        )
        with peak_rss(os.getpid()) as batch_peak:
            t0 = time.monotonic()
            backfill(spark, spec, Sources(bootstrap)).records.write.parquet(f"{out}/batch")
            batch_s = time.monotonic() - t0
        batch_count = spark.read.parquet(f"{out}/batch").count()
        print(
            f"batch   {batch_count:>9} joined in {batch_s:6.1f} s  "
            f"{2 * records / batch_s:>9,.0f} input records/s  "
            f"peak RSS {batch_peak[0] / 2**20:,.0f} MiB"
        )
        if stream_count != batch_count:
            print(f"DIFFERENT COUNTS: stream {stream_count}, batch {batch_count}")
    return stream_count, stream_s, stream_peak[0], batch_s, batch_peak[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=300_000, help="impressions, and clicks")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--kafka-source", choices=("kafka", "python"), default="kafka")
    parser.add_argument("--max-records-per-batch", type=int, default=None)
    parser.add_argument("--skip-worker", action="store_true")
    args = parser.parse_args()
    suffix = uuid.uuid4().hex[:8]
    os.environ["BENCH_SUFFIX"] = suffix
    from backfill_app import app

    from streamjoin.broker import EmbeddedBroker, KafkaBroker
    from streamjoin.kafka.topics import TopicSpec, ensure_topics

    spec = app.get_join("attribute")
    # Spark's connector plans with ListOffsets, which the embedded broker answers wrongly after
    # batched produces (README, "The embedded broker"): the connector leg needs Apache Kafka.
    official = args.kafka_source == "kafka"
    with KafkaBroker() if official else EmbeddedBroker() as broker:
        topics = [*spec.input_topics, spec.into.name]
        asyncio.run(
            ensure_topics(broker.bootstrap, [TopicSpec(t, args.partitions) for t in topics])
        )
        t0 = time.monotonic()
        asyncio.run(produce(broker.bootstrap, *spec.input_topics, args.records))
        print(f"produced {2 * args.records:,} records in {time.monotonic() - t0:.1f} s")
        count, stream_s, stream_rss, batch_s, batch_rss = spark_legs(
            broker.bootstrap,
            args.records,
            official=official,
            max_records_per_batch=args.max_records_per_batch,
        )
        print(
            f"ratio   stream/batch time {stream_s / batch_s:.2f}x (goal: within 2x); "
            f"peak RSS stream/batch {stream_rss / max(1, batch_rss):.2f}x"
        )
        if not args.skip_worker:
            _, worker_s, _ = worker_leg(
                broker.bootstrap, suffix, args.partitions, args.records, count
            )
            print(f"ratio   stream/worker time {stream_s / worker_s:.2f}x")


if __name__ == "__main__":
    main()
