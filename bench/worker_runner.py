"""One streamjoin worker on the benchmarks' ad join, in a process of its own, reporting what the
benchmarks measure as JSON lines on stdout (times are `time.time()`, comparable across processes):

  {"event": "status", ...}    its tasks (active, running, warm-up, standby), record counts
                              and event-loop stall, on every change of roles and every
                              --report-every seconds (--memory-probe: and its memory);
  {"event": "census", ...}    --memory-probe, on SIGUSR1: tracked objects by type;
  {"event": "restored", ...}  an active task finished restoring (records read, seconds);
  {"event": "restore-started"|"restore-progress", ...}
                              a task (active, standby or learner) began reading its
                              changelogs / has read this many records since (every 0.5 s);
  {"event": "done", ...}      with --until-records: that many input records processed and
                              their output acknowledged by the broker, with the time of the
                              first fetch, the CPU time since and the longest event-loop
                              stall, CPU seconds by thread (whole run) and peak RSS;
                              the worker then stops.

A process per worker (rather than several workers in the benchmark's event loop) so that one
worker restoring never delays another's processing, as on separate machines. The worker's own
log goes to stderr.

    python bench/worker_runner.py PREFIX --bootstrap HOST:PORT --state-dir DIR [options]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

from ads_join import AD_WINDOW, make_app
from memory_probe import breakdown, census
from runner_process import rss_bytes
from unbounded import unbounded_settings

from streamjoin import JoinWindows
from streamjoin.compiled import build_description
from streamjoin.memory_settings import parse_size
from streamjoin.runtime.process import gc_tuning, pacing
from streamjoin.runtime.process.worker import Worker, WorkerOptions
from streamjoin.state.events import RestoreCompleted, RestoreProgress, RestoreStarted, StateEvent

__all__ = ("options_from", "parser")


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


def roles(worker: Worker) -> dict[str, list[str]]:
    """The worker's tasks by role: a status line goes out whenever these change."""
    manager = worker.manager
    assert manager is not None
    told = manager.roles.roles()
    return {
        "active": sorted(str(t) for t in manager.active),
        "running": sorted(str(t) for t, a in manager.active.items() if a.running is not None),
        "warmup": sorted(str(t) for t in told.warmup),
        "standby": sorted(str(t) for t in told.standby),
    }


def counts(worker: Worker, memory_probe: bool) -> dict[str, Any]:
    """The worker's figures so far, read only for a status line (the join counters and the
    memory budget's usage take a pass over every task and store); `memory_probe`: with
    "memory", the budget's parts beside where the process's memory is (memory_probe.py)."""
    manager = worker.manager
    assert manager is not None and worker.sink is not None
    joined = [counters for counters, _ in manager.counters().values()]
    probed = {}
    if memory_probe:
        usage = worker.memory.usage()
        parts = {f"budget_{name}": getattr(usage, name) for name in _BUDGET_PARTS}
        probed["memory"] = {**parts, "budget_input": manager.buffered_bytes(), **breakdown()}
    return {
        "in": sum(manager.records_in.values()),
        "buffered": manager.buffered(),
        "out": sum(worker.sink.sent.values()),
        "late": sum(c.late for c in joined),
        "assignments": manager.rebalances,
        "budgeted": worker.memory.usage().total + manager.buffered_bytes(),
        "rss": rss_bytes(os.getpid()),
        **probed,
    }


_BUDGET_PARTS = ("write_buffers", "block_cache", "recent_records", "pending_non_matches")


async def report(worker: Worker, every_s: float, memory_probe: bool) -> None:
    """A status line whenever the tasks or roles change, and every `every_s` seconds; "stall"
    is the longest the worker's event loop ran late since the previous line."""
    await worker.started.wait()
    last: dict[str, list[str]] = {}
    next_periodic = 0.0
    stall = 0.0
    while True:
        now = roles(worker)
        stall = max(stall, worker.loop_monitor.reset_max())
        if now != last or time.monotonic() >= next_periodic:
            emit("status", stall=round(stall, 3), **now, **counts(worker, memory_probe))
            last, stall = now, 0.0
            next_periodic = time.monotonic() + every_s
        await asyncio.sleep(0.05)


async def until_processed(worker: Worker, records: int) -> None:
    """Report once `records` input records have been processed and their output acknowledged,
    with the time and process CPU time since the first record was fetched; then stop.

    The first fetch is stamped inside `getmany`: while it has records buffered the worker's
    loop may not yield to other tasks, so a watcher task would see it late.
    """
    await worker.started.wait()
    manager, consumer, sink = worker.manager, worker.consumer, worker.sink
    assert manager is not None and sink is not None
    fetch = consumer.getmany
    first: list[tuple[float, float]] = []

    async def stamped(*args: Any, **kwargs: Any) -> Any:
        fetched = await fetch(*args, **kwargs)
        if fetched and not first:
            first.append((time.time(), time.process_time()))
        return fetched

    consumer.getmany = stamped
    while sum(manager.records_in.values()) < records or any(  # noqa: ASYNC110 - polled state
        a.running is None or a.running.buffered() for a in manager.active.values()
    ):
        await asyncio.sleep(0.01)
    await sink.flush()
    emit(
        "done",
        first=first[0][0],
        cpu_s=time.process_time() - first[0][1],
        records_in=sum(manager.records_in.values()),
        out=sum(sink.sent.values()),
        longest_stall=worker.loop_monitor.max_lag_s,
        threads=thread_cpu(),
        build=build_description(),
        peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # KiB on Linux
    )
    worker.stop()


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process by thread name (Linux /proc): the Python thread against
    RocksDB's background threads (flushes, compactions)."""
    seconds: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        utime, stime = int(stat[11]), int(stat[12])
        seconds[name] = seconds.get(name, 0.0) + (utime + stime) / tick
    return seconds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("prefix", help="app id and topic prefix (see ads_join.py)")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--window-after-ms", type=int, default=AD_WINDOW.after_ms)
    p.add_argument("--acceptable-recovery-lag", type=int, default=10_000)
    p.add_argument("--probing-interval-s", type=float, default=600.0)
    p.add_argument("--max-warmup-replicas", type=int, default=2)
    p.add_argument("--standby-replicas", type=int, default=0)
    p.add_argument("--no-followup-on-catch-up", action="store_true")
    p.add_argument("--commit-interval", type=float, help="seconds (default: the app's, 5)")
    p.add_argument(
        "--processing-guarantee", choices=("at_least_once", "exactly_once"), default=None
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=0.0,
        help="seconds a SIGTERM hands the tasks off warm before leaving (default 0: leave at "
        "once, as the benchmarks that only stop their workers want)",
    )
    p.add_argument(
        "--flush-interval",
        type=float,
        help="seconds between a live worker's state flushes (default: runtime/process/"
        "pacing.py's; one at least the commit interval: only at commits, as before issue 40's "
        "item 5)",
    )
    p.add_argument(
        "--gc-young-threshold",
        type=int,
        help="net allocations between young collections (default: runtime/process/gc_tuning.py's)",
    )
    p.add_argument("--report-every", type=float, default=0.5)
    p.add_argument(
        "--memory-probe",
        action="store_true",
        help="status lines add 'memory': the budget's parts and the allocators' figures; "
        "SIGUSR1 prints a 'census' line: tracked objects by type (memory_probe.py)",
    )
    p.add_argument("--until-records", type=int, help="stop after this many input records")
    p.add_argument(
        "--rekey-clicks", action="store_true", help="re-key the clicks by auction (key_by)"
    )
    p.add_argument("--memory", help="the worker's memory budget (e.g. 256MiB; default the app's)")
    p.add_argument(
        "--unbounded",
        action="store_true",
        help="RocksDB's per-store defaults and 32 MiB of newest records per window store, as "
        "before the memory budget (a baseline)",
    )
    return p


def options_from(args: argparse.Namespace) -> WorkerOptions:
    return WorkerOptions(
        bootstrap=args.bootstrap,
        state_dir=args.state_dir,
        commit_interval_s=args.commit_interval,
        processing_guarantee=args.processing_guarantee,
        memory_budget_bytes=None if args.memory is None else parse_size(args.memory),
        session_timeout_ms=6_000,
        heartbeat_interval_ms=500,
        followup_on_catch_up=not args.no_followup_on_catch_up,
        num_standby_replicas=args.standby_replicas,
        drain_timeout_s=args.drain_timeout,
    )


async def main(args: argparse.Namespace) -> None:
    window = JoinWindows(
        before=AD_WINDOW.before_ms, after=args.window_after_ms, grace=AD_WINDOW.grace_ms
    )
    app = make_app(
        args.prefix,
        window=window,
        broker=args.bootstrap,
        acceptable_recovery_lag=args.acceptable_recovery_lag,
        probing_rebalance_interval_s=args.probing_interval_s,
        max_warmup_replicas=args.max_warmup_replicas,
        rekey_clicks=args.rekey_clicks,
        **(unbounded_settings() if args.unbounded else {}),
    )
    if args.gc_young_threshold is not None:
        gc_tuning.YOUNG_THRESHOLD = args.gc_young_threshold
    if args.flush_interval is not None:
        pacing.FLUSH_INTERVAL_S = args.flush_interval
    worker = Worker(app, options_from(args))

    def on_event(event: StateEvent) -> None:
        if isinstance(event, RestoreStarted):
            emit("restore-started", task=event.task_id, standby=event.standby)
        elif isinstance(event, RestoreProgress):
            emit("restore-progress", task=event.task_id, restored=event.restored)
        elif isinstance(event, RestoreCompleted):
            emit("restored", task=event.task_id, restored=event.restored, seconds=event.seconds)

    async def subscribe() -> None:
        await worker.started.wait()
        assert worker.state is not None
        worker.state.subscribe(on_event)

    signals = 0

    def on_signal() -> None:  # as `streamjoin worker`: warm first, a second one at once
        nonlocal signals
        signals += 1
        worker.stop(warm=signals == 1)

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal)
    if args.memory_probe:  # on demand: a second or so of the worker's time
        loop.add_signal_handler(signal.SIGUSR1, lambda: emit("census", types=census()))
    helpers = [asyncio.create_task(subscribe())]
    if args.until_records is not None:
        helpers.append(asyncio.create_task(until_processed(worker, args.until_records)))
    else:
        helpers.append(asyncio.create_task(report(worker, args.report_every, args.memory_probe)))
    try:
        await worker.run()
    finally:
        for helper in helpers:
            helper.cancel()


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    asyncio.run(main(parser().parse_args()))
