"""The ad join written by hand with faust-streaming (baseline (b) of bench/join_throughput.py).

What a faust user writes for apps/ads/app.py's join: one agent reads both topics; three
RocksDB-backed tables with changelogs (impressions, clicks, impressions still unmatched) hold the
state; a click joins its auction's impression within [t, t + 60 s]; an impression that matched
nothing is emitted as unclicked once the partition's watermark has passed its window and grace;
records later than that are dropped. Faust delivers the two topics in whatever order it fetches
them (it has no timestamp ordering across topics, as streamjoin and Kafka Streams do), so
the watermark is the smaller of the two sides' largest timestamps, not the largest of all: a
click topic read ahead would otherwise make every impression late. One record per key and side,
which is all this data has (an auction has one impression and at most one click); streamjoin's
window stores keep any number.

On the embedded broker (faust-streaming 0.15.3, aiokafka 0.14) it runs with no workaround:
faust creates its changelog and assignor topics itself (CreateTopics), its own partition
assignor works through the broker's group protocol, and the tables use RocksDB through
rocksdict. Replication factor 1 and no web server are the only settings the broker needs; the
first group join takes about 30 s (not timed: timing starts at the first record).

Configured from the environment (the benchmark starts it as a subprocess):
  FAUST_BENCH_PREFIX      app id and topics `<prefix>-impressions`, `-clicks`, `-attributed`
  FAUST_BENCH_BROKER      host:port
  FAUST_BENCH_PARTITIONS  partitions of the inputs (the tables' changelogs get as many)
  FAUST_BENCH_DATADIR     where the tables' RocksDB files go
  FAUST_BENCH_RECORDS     input records after which it reports, as bench/worker_runner.py
                          does, a JSON line {"event": "done", "t", "first", "cpu_s", ...}

    python bench/faust_join_app.py worker --loglevel warn
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import deque
from typing import Any

import faust

__all__ = ("app",)

PREFIX = os.environ.get("FAUST_BENCH_PREFIX", "faust-join")
RECORDS = int(os.environ.get("FAUST_BENCH_RECORDS", "0"))
BEFORE_MS, AFTER_MS, GRACE_MS = 0, 60_000, 5_000
"""The demo's window (apps/ads/app.py)."""
NO_TIME = -(2**63)

# aiokafka's debug calls otherwise build log records that the worker's handlers then drop.
logging.getLogger("aiokafka").setLevel(logging.WARNING)

app = faust.App(
    PREFIX,
    broker=f"kafka://{os.environ.get('FAUST_BENCH_BROKER', 'localhost:9092')}",
    store="rocksdb://",
    datadir=os.environ.get("FAUST_BENCH_DATADIR", "faust-data"),
    topic_partitions=int(os.environ.get("FAUST_BENCH_PARTITIONS", "4")),
    topic_replication_factor=1,
    web_enabled=False,
    consumer_auto_offset_reset="earliest",
    producer_linger_ms=5,
)
RAW: dict[str, Any] = {
    "key_type": bytes,
    "value_type": bytes,
    "key_serializer": "raw",
    "value_serializer": "raw",
}
IMPRESSIONS, CLICKS = f"{PREFIX}-impressions", f"{PREFIX}-clicks"
inputs = app.topic(IMPRESSIONS, CLICKS, **RAW)
output = app.topic(f"{PREFIX}-attributed", **RAW)
TABLE: dict[str, Any] = {"key_type": bytes, "value_type": bytes}
"""bytes keys and values: faust picks its `raw` codec."""
impressions = app.Table("impressions", **TABLE)
clicks = app.Table("clicks", **TABLE)
unmatched = app.Table("unmatched", **TABLE)
"""Impressions that have matched nothing yet: auction id -> timestamp."""

sent = [0]
latest: dict[tuple[str, int], int] = {}
"""Largest timestamp seen per (topic, partition)."""
closing: dict[int, deque[tuple[int, bytes]]] = {}
"""Per partition, unmatched impressions in arrival order, to emit once their window closes (in
memory only, like `latest`: a restart would forget them; enough for a throughput baseline)."""


def attributed(impression: dict[str, Any], click: dict[str, Any] | None) -> bytes:
    delay = None if click is None else click["timestamp_ms"] - impression["timestamp_ms"]
    value = {
        "auction_id": impression["auction_id"],
        "campaign": impression["campaign"],
        "clicked": click is not None,
        "click_delay_ms": delay,
    }
    return json.dumps(value, separators=(",", ":")).encode()


async def send(key: bytes, value: bytes) -> None:
    await output.send(key=key, value=value)
    sent[0] += 1


async def on_impression(partition: int, key: bytes, raw: bytes, t: int) -> None:
    impressions[key] = raw
    stored_click = clicks.get(key)
    if stored_click is not None:
        click = json.loads(stored_click)
        if t - BEFORE_MS <= click["timestamp_ms"] <= t + AFTER_MS:
            await send(key, attributed(json.loads(raw), click))
            return
    unmatched[key] = str(t).encode()
    closing.setdefault(partition, deque()).append((t, key))


async def on_click(key: bytes, raw: bytes, t: int) -> None:
    clicks[key] = raw
    stored_impression = impressions.get(key)
    if stored_impression is None:
        return
    impression = json.loads(stored_impression)
    if t - AFTER_MS <= impression["timestamp_ms"] <= t + BEFORE_MS:
        await send(key, attributed(impression, json.loads(raw)))
        if key in unmatched:
            del unmatched[key]


def watermark(partition: int) -> int:
    return min(
        latest.get((IMPRESSIONS, partition), NO_TIME), latest.get((CLICKS, partition), NO_TIME)
    )


async def emit_closed(partition: int, now: int) -> None:
    """Unclicked impressions whose window and grace have passed by the watermark `now`."""
    queue = closing.get(partition)
    horizon = now - (BEFORE_MS + AFTER_MS + GRACE_MS)
    while queue and queue[0][0] < horizon:
        _, key = queue.popleft()
        if key in unmatched:
            del unmatched[key]
            impression = json.loads(impressions[key])
            await send(key, attributed(impression, None))


def report(event: str, **fields: Any) -> None:
    """To the real stdout: a faust worker sends `print` to its log."""
    line = json.dumps({"event": event, "t": time.time(), **fields})
    print(line, file=sys.__stdout__, flush=True)


@app.agent(inputs)
async def join(stream: Any) -> None:
    seen = 0
    first = (0.0, 0.0)
    async for event in stream.events():
        if seen == 0:
            first = (time.time(), time.process_time())
        seen += 1
        message = event.message
        partition, key, raw = message.partition, message.key, message.value
        t = json.loads(raw)["timestamp_ms"]
        side = (message.topic, partition)
        latest[side] = max(latest.get(side, NO_TIME), t)
        now = watermark(partition)
        if message.topic == IMPRESSIONS:
            if t + AFTER_MS + GRACE_MS >= now:
                await on_impression(partition, key, raw, t)
        elif t + BEFORE_MS + GRACE_MS >= now:
            await on_click(key, raw, t)
        await emit_closed(partition, now)
        if seen == RECORDS:
            await app.producer.flush()
            report(
                "done",
                first=first[0],
                cpu_s=time.process_time() - first[1],
                records_in=seen,
                out=sent[0],
            )


if __name__ == "__main__":
    app.main()
