"""Consumer assignor benchmark: streamjoin's sticky and cooperative-sticky against aiokafka's.

For groups of 100 members x 10,000 partitions, 300 x 30,000 and 1,000 x 100,000 (10 topics, all
members subscribed to all), times these steps on the same inputs for every assignor:
  fresh   - nobody owns anything;
  leave   - one member of the fresh group leaves, the others report what they own;
  join    - one member joins the fresh group, the others report what they own;
  rolling - half the members of the fresh group subscribe to an 11th topic (heterogeneous
            subscriptions: the general algorithm);
  mixed   - every member of the fresh group keeps 1-6 of the 10 topics, a random subset (the
            general algorithm with its least-spread and stickiest steps doing real work).

`sticky` receives its history as EAGER members send it, in KIP-341 user data (the very bytes
aiokafka's StickyPartitionAssignor reads); `cooperative-sticky` as COOPERATIVE members send it,
as owned partitions and generation (consumer protocol v2), and is shown where the group stands
after the follow-up rebalance. aiokafka's StickyPartitionAssignor, run in the same process on
the same inputs, is the baseline (skipped above 300 x 30,000, where one step takes about 30 s,
and for the rolling update above 100 x 10,000). Printed per step: wall and CPU time (CPU time is
what other processes on a shared machine disturb least) of a warm call (streamjoin's
assignors run once untimed first: Java's figures are for a warm JVM), peak memory of the
call (tracemalloc, in a separate run), the smallest and largest assignment, whether it is
balanced as KIP-54 defines it, and partitions kept and moved against what members owned.
Java's StickyAssignor, measured on these machines at 1,000 x 100,000 (100 topics), takes
about 50 ms fresh and 120-150 ms per leave or join once warm.

`--cold` instead times the first call in a fresh process, as a group leader pays it on its first
rebalance after a restart: per assignor and step (fresh, leave, join) a new Python process
imports the assignor, reads the group's inputs (prepared by this process, untimed) and times its
first call, then warm calls (the best of three), next to Java's warm times measured in-JVM
(Kafka 3.9.1: sticky 53 / 119 / 148 ms, cooperative-sticky 19 / 99 / 95 ms); the goal is a cold
call within 2x of those. `--repeat N` starts N fresh processes per assignor and step and prints
the medians, with the load average (on a shared machine the figures move with it).

    python bench/assignors.py [--sizes 100x10000,300x30000,1000x100000] [--no-memory]
    python bench/assignors.py --cold [--sizes 1000x100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from streamjoin.assignment.consumer.cooperative_sticky import CooperativeStickyAssignor
from streamjoin.assignment.consumer.sticky.assignor import StickyAssignor
from streamjoin.assignment.consumer.sticky.user_data import encode_sticky_user_data
from streamjoin.assignment.consumer.summary import is_balanced
from streamjoin.assignment.model import (
    NO_GENERATION,
    Assignment,
    GroupAssignment,
    Subscription,
    TopicPartition,
)

TOPICS = 10
AIOKAFKA_LIMIT = 30_000
"""Largest partition count at which aiokafka's assignor is run."""
AIOKAFKA_ROLLING_LIMIT = 10_000
"""The same for the rolling update, on which aiokafka is several times slower still."""
AIOKAFKA_MIXED_LIMIT = 2_000
"""The same for mixed subscriptions: at 100 x 10,000 aiokafka took 94 s of CPU (spread 2,
2,863 kept, against streamjoin's 46 ms, spread 0, 3,270 kept), so the default sizes skip it."""
AIOKAFKA = "aiokafka sticky"
ASSIGNORS = ("sticky", "cooperative-sticky", AIOKAFKA)

Owned = dict[str, tuple[TopicPartition, ...]]
Group = dict[str, tuple[str, ...]]


class Cluster:
    """The two methods of aiokafka's ClusterMetadata that its sticky assignor calls."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self._counts = counts

    def topics(self) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self._counts[topic])) if topic in self._counts else None


@dataclass(frozen=True)
class Contender:
    """A timed call on prepared inputs, and how to read its result (outside the timing)."""

    call: Callable[[], Any]
    result: Callable[[Any], Owned]
    warm_up: bool = True
    """Run once untimed first, like a warm JVM (caches of TopicPartition objects fill up)."""


def contender(name: str, counts: dict[str, int], group: Group, owned: Owned) -> Contender:
    """Inputs are prepared up front, as each member encodes its own subscription.

    cooperative-sticky's result is its target, where the group stands after the follow-up
    rebalance, so that balance and movement compare like with like.
    """
    if name == AIOKAFKA:
        members = {
            m: ConsumerProtocolMemberMetadata(0, list(t), _user_data(owned, m))
            for m, t in group.items()
        }
        cluster = Cluster(counts)
        return Contender(
            lambda: StickyPartitionAssignor.assign(cluster, members),
            lambda result: {
                m: tuple(TopicPartition(t, p) for t, ps in a.assignment for p in ps)
                for m, a in result.items()
            },
            warm_up=False,  # nothing to warm, and a call takes up to a minute
        )
    if name == "sticky":
        sticky = StickyAssignor()
        subscriptions = {m: Subscription(t, _user_data(owned, m)) for m, t in group.items()}
        return Contender(lambda: sticky.assign(counts, subscriptions), _partitions)
    cooperative = CooperativeStickyAssignor()
    subscriptions = {
        m: Subscription(t, b"", owned.get(m, ()), 1 if m in owned else NO_GENERATION)
        for m, t in group.items()
    }
    return Contender(
        lambda: cooperative.assign_step(counts, subscriptions),
        lambda step: _partitions(step.target()),
    )


def _user_data(owned: Owned, member: str) -> bytes:
    return encode_sticky_user_data(owned[member], 1) if member in owned else b""


def _partitions(assignment: GroupAssignment) -> Owned:
    return {m: a.partitions for m, a in assignment.items()}


@dataclass
class Measured:
    result: Owned
    wall_ms: float
    cpu_ms: float
    peak_mib: float | None


def measure(run: Contender, memory: bool) -> Measured:
    if run.warm_up:
        run.call()
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    output = run.call()
    wall_ms = (time.perf_counter() - wall) * 1000
    cpu_ms = (time.process_time() - cpu) * 1000
    peak = None
    if memory:
        gc.collect()
        tracemalloc.start()
        run.call()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return Measured(run.result(output), wall_ms, cpu_ms, peak)


def describe(measured: Measured, group: Group, counts: dict[str, int], owned: Owned) -> str:
    sizes = [len(p) for p in measured.result.values()]
    owners = {tp: m for m, parts in owned.items() for tp in parts}
    kept = sum(1 for m, parts in measured.result.items() for tp in parts if owners.get(tp) == m)
    moved = sum(
        1 for m, parts in measured.result.items() for tp in parts if owners.get(tp) not in (None, m)
    )
    eligible = {m: [t for t in topics if counts.get(t)] for m, topics in group.items()}
    balanced = is_balanced({m: Assignment(p) for m, p in measured.result.items()}, eligible)
    peak = f"{measured.peak_mib:7.1f}" if measured.peak_mib is not None else "      -"
    return (
        f"{measured.wall_ms:9.1f} {measured.cpu_ms:9.1f} {peak} "
        f"{min(sizes):5d}/{max(sizes):<5d} {'yes' if balanced else 'NO':>4} {kept:7d} {moved:7d}"
    )


def steps(members: int, partitions: int) -> list[tuple[str, dict[str, int], Group, Group, bool]]:
    """(step, partition counts, group before, group now, members report ownership)."""
    counts = {f"topic-{i:02d}": partitions // TOPICS for i in range(TOPICS)}
    names = [f"member-{i:05d}" for i in range(members)]
    everyone = dict.fromkeys(names, tuple(counts))
    rolling_counts = {**counts, "topic-new": partitions // TOPICS}
    rolling = {
        m: (*counts, "topic-new") if i % 2 == 0 else tuple(counts) for i, m in enumerate(names)
    }
    subsets = random.Random(members)
    mixed = {m: tuple(sorted(subsets.sample(sorted(counts), subsets.randint(1, 6)))) for m in names}
    return [
        ("fresh", counts, everyone, everyone, False),
        ("leave", counts, everyone, dict(list(everyone.items())[1:]), True),
        ("join", counts, everyone, {**everyone, "member-new": tuple(counts)}, True),
        ("rolling", rolling_counts, everyone, rolling, True),
        ("mixed", counts, everyone, mixed, True),
    ]


JAVA_WARM_MS = {
    ("sticky", "fresh"): 53,
    ("sticky", "leave"): 119,
    ("sticky", "join"): 148,
    ("cooperative-sticky", "fresh"): 19,
    ("cooperative-sticky", "leave"): 99,
    ("cooperative-sticky", "join"): 95,
}
"""Kafka 3.9.1's Java assignors at 1,000 x 100,000, warm JVM (measured, see the issue)."""


def cold_child(name: str, step: str, size: str, inputs: str) -> None:
    """In a fresh process: the first call and the best of three warm ones, as JSON."""
    members, partitions = (int(x) for x in size.split("x"))
    with open(inputs, "rb") as file:
        pairs: dict[str, list[tuple[str, int]]] = pickle.load(file)
    _, counts, before, group, reports = next(s for s in steps(members, partitions) if s[0] == step)
    owned = {
        m: tuple(TopicPartition(t, p) for t, p in tps)
        for m, tps in pairs.items()
        if m in before and reports
    }
    run = contender(name, counts, group, owned)
    timings = []
    for _ in range(4):
        wall, cpu = time.perf_counter(), time.process_time()
        run.call()
        timings.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
    warm = min(timings[1:], key=lambda t: t[1])
    print(json.dumps({"cold": timings[0], "warm": warm}))


def cold(sizes: str, repeat: int) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load average {load}; medians of {repeat} fresh process(es)")
    print(
        f"{'members x partitions':>22} {'step':<6} {'assignor':<19} "
        f"{'cold wall/cpu ms':>17} {'warm wall/cpu ms':>17} {'Java warm':>9} {'cold cpu/Java':>13}"
    )
    for size in sizes.split(","):
        members, partitions = (int(x) for x in size.split("x"))
        for name in ASSIGNORS[:2]:
            _, counts, _, group, _ = steps(members, partitions)[0]
            fresh = measure(contender(name, counts, group, {}), memory=False).result
            with tempfile.NamedTemporaryFile(suffix=".pickle") as inputs:
                pairs = {m: [(tp.topic, tp.partition) for tp in tps] for m, tps in fresh.items()}
                pickle.dump(pairs, inputs)
                inputs.flush()
                for step in ("fresh", "leave", "join"):
                    child = [sys.executable, __file__, "--cold-child", name, step, size]
                    runs = [
                        json.loads(
                            subprocess.run(
                                [*child, inputs.name], check=True, capture_output=True, text=True
                            ).stdout
                        )
                        for _ in range(repeat)
                    ]
                    cold_wall, cold_cpu, warm_wall, warm_cpu = (
                        statistics.median(run[when][i] for run in runs)
                        for when in ("cold", "warm")
                        for i in (0, 1)
                    )
                    java = JAVA_WARM_MS.get((name, step)) if size == "1000x100000" else None
                    ratio = f"{cold_cpu / java:12.1f}x" if java else f"{'-':>13}"
                    print(
                        f"{members:>10,} x {partitions:<9,} {step:<6} {name:<19} "
                        f"{cold_wall:8.1f}/{cold_cpu:<8.1f} {warm_wall:8.1f}/{warm_cpu:<8.1f} "
                        f"{java or '-':>9} {ratio}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="default: 100x10000,300x30000,1000x100000")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--cold", action="store_true", help="first calls in fresh processes")
    parser.add_argument(
        "--repeat", type=int, default=1, help="--cold: fresh processes per assignor and step"
    )
    parser.add_argument("--cold-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child(*args.cold_child)
        return
    if args.cold:
        cold(args.sizes or "1000x100000", max(args.repeat, 1))
        return
    args.sizes = args.sizes or "100x10000,300x30000,1000x100000"
    logging.disable(logging.WARNING)  # aiokafka logs every assignment step at INFO
    print(
        f"{'members x partitions':>22} {'step':<8} {'assignor':<19} {'wall ms':>9} {'cpu ms':>9} "
        f"{'peak MiB':>7} {'min/max':>11} {'bal':>4} {'kept':>7} {'moved':>7}"
    )
    for size in args.sizes.split(","):
        members, partitions = (int(x) for x in size.split("x"))
        label = f"{members:,} x {partitions:,}"
        fresh: dict[str, Owned] = {}
        for step, counts, before, group, reports in steps(members, partitions):
            cpu: dict[str, float] = {}
            for name in ASSIGNORS:
                limit = {"rolling": AIOKAFKA_ROLLING_LIMIT, "mixed": AIOKAFKA_MIXED_LIMIT}.get(
                    step, AIOKAFKA_LIMIT
                )
                if name == AIOKAFKA and partitions > limit:
                    continue
                owned = {m: p for m, p in fresh.get(name, {}).items() if m in before and reports}
                measured = measure(contender(name, counts, group, owned), not args.no_memory)
                if step == "fresh":
                    fresh[name] = measured.result
                cpu[name] = measured.cpu_ms
                print(
                    f"{label:>22} {step:<8} {name:<19} {describe(measured, group, counts, owned)}"
                )
            if AIOKAFKA in cpu:
                ratios = ", ".join(
                    f"{name} {cpu[AIOKAFKA] / max(cpu[name], 1e-3):.0f}x" for name in ASSIGNORS[:2]
                )
                print(f"{'':>22} {'':<8} faster than aiokafka (CPU time): {ratios}")


if __name__ == "__main__":
    main()
