"""Consumer assignor benchmark: streamjoin's sticky and cooperative-sticky against Apache Kafka's
own (the pinned release's kafka-clients, `make kafka-jars`), measured in the same run.

At 1,000 members x 100,000 partitions (10 topics, every member subscribed to all) by default,
these steps, each given to both on the same input:
  fresh   - nobody owns anything;
  leave   - one member leaves, the others report what they own;
  join    - one member joins, the others report what they own;
  rolling - (optional) half the members subscribe to an 11th topic: the general algorithm;
  mixed   - (optional) every member keeps 1-6 of the 10 topics, a random subset.
What members own is Kafka's fresh assignment of the same group, as generation 1: in user data
for `sticky` (EAGER), as owned partitions for `cooperative-sticky` (COOPERATIVE), each written
the way that assignor's own members write it.

Kafka's assignors run in one JVM for the whole run (bench/java/KafkaAssignors.java): per round
and step, warm-up calls and then timed ones, whose median is Java's warm time. streamjoin's run
in a fresh Python process per round and step: the first call (cold: what a group leader pays on
its first rebalance after a restart), then warm calls. Per step the table gives Java's warm
median, streamjoin's cold and warm medians, the ratios cold / Java and warm / Java (median and
range over rounds, each round's ratio from that round's figures), partitions kept by each (for
cooperative-sticky, once the follow-up rebalance has handed over what it withholds) and the
spread. A second table adds to each call what the leader does next: encode every member's
assignment for SyncGroup (Kafka's ConsumerProtocol.serializeAssignment, streamjoin's
encode_assignment), so that an assignment held compactly until it is encoded (see Assignment)
is charged for what it defers. Times are CPU time, the JVM's whole process (its collector and
compiler threads count) against the Python process; wall times are printed beside them. On a
shared machine figures move with the load, which is printed: same-run ratios are what to
compare.

Then the churn families (bench/assignor_churn.py): per family and assignor, the steps and
scenarios in which streamjoin keeps fewer or more partitions than Kafka on the same input, at
the same spread or a narrower one, and whether its spread is ever wider.

    python bench/assignors.py [--size 1000x100000] [--rounds 3] [--steps fresh,leave,join]
                              [--churn-seeds 10] [--no-churn]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assignor_churn import FAMILIES, run_scenario, streamjoin_call
from kafka_assignors import JavaMember, KafkaAssignors

from streamjoin.assignment.consumer.consumer_protocol import encode_assignment
from streamjoin.assignment.consumer.summary import is_balanced
from streamjoin.assignment.model import Assignment, TopicPartition
from streamjoin.errors import StreamJoinError

TOPICS = 10
ASSIGNORS = ("sticky", "cooperative-sticky")
STEPS = ("fresh", "leave", "join", "rolling", "mixed")

Owned = dict[str, tuple[TopicPartition, ...]]
Members = dict[str, JavaMember]


def group(step: str, members: int, partitions: int, owned: Owned) -> tuple[dict[str, int], Members]:
    """The step's partition counts and members, what they own taken from `owned` (generation 1)."""
    counts = {f"topic-{i:02d}": partitions // TOPICS for i in range(TOPICS)}
    names = [f"member-{i:05d}" for i in range(members)]
    topics: dict[str, tuple[str, ...]] = dict.fromkeys(names, tuple(counts))
    if step == "leave":
        del topics[names[0]]
    elif step == "join":
        topics["member-new"] = tuple(counts)
    elif step == "rolling":
        counts["topic-new"] = partitions // TOPICS
        topics = {
            m: (*t, "topic-new") if i % 2 == 0 else t for i, (m, t) in enumerate(topics.items())
        }
    elif step == "mixed":
        subsets = random.Random(members)
        topics = {
            m: tuple(sorted(subsets.sample(sorted(counts), subsets.randint(1, 6)))) for m in names
        }
    reports = step != "fresh"
    return counts, {
        m: JavaMember(t, owned.get(m, ()), 1) if reports and m in owned else JavaMember(t)
        for m, t in topics.items()
    }


def figures(result: Owned, members: Members, counts: Mapping[str, int]) -> dict[str, Any]:
    """Partitions kept against what members report owning, the spread, KIP-54 balance."""
    owners = {tp: m for m, j in members.items() for tp in j.owned}
    kept = sum(1 for m, parts in result.items() for tp in parts if owners.get(tp) == m)
    sizes = [len(result.get(m, ())) for m in members]
    eligible = {m: [t for t in j.topics if counts.get(t)] for m, j in members.items()}
    balanced = is_balanced({m: Assignment(result.get(m, ())) for m in members}, eligible)
    return {"kept": kept, "spread": max(sizes) - min(sizes), "balanced": balanced}


def child(assignor: str, inputs: str, warm: int) -> None:
    """In a fresh process: the first call and `warm` more, each then encoded for SyncGroup as
    the leader sends it, with the result's figures, as JSON."""
    with open(inputs, "rb") as file:
        counts, members = pickle.load(file)
    call = streamjoin_call(assignor, counts, members)
    timings: list[tuple[float, float, float, float]] = []
    result = None
    for _ in range(1 + warm):
        result = None  # the last result is freed outside the timing, as Java's is collected
        wall, cpu = time.perf_counter(), time.process_time()
        result = call.run()
        ran = time.perf_counter(), time.process_time()
        for given in call.sent(result).values():
            encode_assignment(given)
        timings.append(
            (
                (ran[0] - wall) * 1000,
                (ran[1] - cpu) * 1000,
                (time.perf_counter() - ran[0]) * 1000,
                (time.process_time() - ran[1]) * 1000,
            )
        )
    owned = call.read(result)
    print(json.dumps({"cold": timings[0], "warm": timings[1:], **figures(owned, members, counts)}))


Times = tuple[float, float, float, float]
"""Of one call, in ms: assign wall, assign CPU, encode wall, encode CPU (encode: every member's
assignment encoded for SyncGroup, as the leader sends it)."""


@dataclass
class Row:
    """One assignor and step over the rounds: per round, Java's warm median, streamjoin's cold
    call and its warm median."""

    java: list[Times] = field(default_factory=list)
    cold: list[Times] = field(default_factory=list)
    warm: list[Times] = field(default_factory=list)
    kept: tuple[int, int] = (0, 0)
    spread: tuple[int, int] = (0, 0)


def _medians(calls: Sequence[Sequence[float]]) -> Times:
    wall, cpu, encode_wall, encode_cpu = (statistics.median(c[i] for c in calls) for i in range(4))
    return wall, cpu, encode_wall, encode_cpu


def _spread(values: Iterable[float], digits: int = 1) -> str:
    ordered = sorted(values)
    median = statistics.median(ordered)
    return f"{median:.{digits}f} ({ordered[0]:.{digits}f}-{ordered[-1]:.{digits}f})"


def measure(args: argparse.Namespace, java: KafkaAssignors) -> dict[tuple[str, str], Row]:
    members, partitions = (int(x) for x in args.size.split("x"))
    steps = args.steps.split(",")
    fresh_counts, fresh_members = group("fresh", members, partitions, {})
    rows: dict[tuple[str, str], Row] = {}
    owned: dict[str, Owned] = {}
    with tempfile.TemporaryDirectory(prefix="assignors-") as scratch:
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}, load {_load()}", file=sys.stderr)
            for assignor in ASSIGNORS:
                if assignor not in owned:
                    owned[assignor] = java.assign(assignor, fresh_counts, fresh_members).assignment
                for step in steps:
                    counts, group_members = group(step, members, partitions, owned[assignor])
                    theirs = java.assign(
                        assignor,
                        counts,
                        group_members,
                        warm_ups=args.java_warm_ups,
                        timed=args.java_timed,
                    )
                    inputs = Path(scratch) / f"{assignor}-{step}.pickle"
                    inputs.write_bytes(pickle.dumps((counts, group_members)))
                    command = [sys.executable, __file__, "--child", assignor, str(inputs)]
                    ours = json.loads(
                        subprocess.run(
                            [*command, str(args.warm)], check=True, capture_output=True, text=True
                        ).stdout
                    )
                    row = rows.setdefault((assignor, step), Row())
                    row.java.append(_medians(theirs.times_ms))
                    row.cold.append(tuple(ours["cold"]))
                    row.warm.append(_medians(ours["warm"]))
                    java_figures = figures(theirs.assignment, group_members, counts)
                    row.kept = (ours["kept"], java_figures["kept"])
                    row.spread = (ours["spread"], java_figures["spread"])
    return rows


def report(rows: Mapping[tuple[str, str], Row], args: argparse.Namespace) -> None:
    print(
        f"\n{args.size.replace('x', ' members x ')} partitions, {args.rounds} round(s), "
        f"Kafka {args.kafka_version} in one JVM ({args.java_warm_ups} warm-up + "
        f"{args.java_timed} timed calls per step and round), streamjoin in a fresh process per "
        f"step and round (cold call + {args.warm} warm). CPU ms, median (range over rounds); "
        f"load {_load()}"
    )
    _table(rows, "assign", lambda t: t[1])
    _table(rows, "assign + encode for SyncGroup", lambda t: t[1] + t[3])
    print("wall ms, median: Java warm / streamjoin cold / streamjoin warm (assign only)")
    for (assignor, step), row in rows.items():
        java, cold, warm = (
            statistics.median(t[0] for t in ts) for ts in (row.java, row.cold, row.warm)
        )
        print(f"{assignor:<19} {step:<7} {java:9.1f} / {cold:9.1f} / {warm:9.1f}")


def _table(rows: Mapping[tuple[str, str], Row], what: str, cpu: Callable[[Times], float]) -> None:
    print(f"\n{what}:")
    print(
        f"{'assignor':<19} {'step':<7} {'Java warm':>19} {'streamjoin cold':>19} "
        f"{'streamjoin warm':>19} {'cold/Java':>17} {'warm/Java':>17} {'kept ours/Java':>17} "
        f"{'spread':>6}"
    )
    for (assignor, step), row in rows.items():
        java = [cpu(t) for t in row.java]
        cold = [cpu(t) for t in row.cold]
        warm = [cpu(t) for t in row.warm]
        print(
            f"{assignor:<19} {step:<7} {_spread(java):>19} {_spread(cold):>19} {_spread(warm):>19} "
            f"{_spread((c / j for c, j in zip(cold, java, strict=True)), 2):>17} "
            f"{_spread((w / j for w, j in zip(warm, java, strict=True)), 2):>17} "
            f"{row.kept[0]:>8}/{row.kept[1]:<8} {row.spread[0]:>2}/{row.spread[1]:<2}"
        )


def churn(java: KafkaAssignors, seeds: int) -> None:
    """Per family and assignor, steps compared: kept fewer / more partitions than Kafka, at
    the same spread or a narrower one (more balanced), and spreads wider than Kafka's."""
    print(
        f"\nchurn families, {seeds} seeds each, both drivers (each scenario's groups follow "
        "streamjoin's assignments, then Kafka's); per step both assign the same input.\n"
        "Steps in which streamjoin keeps fewer: at the same spread (goal 0), or at a narrower "
        "one (more balanced than Kafka; no assignment that balanced keeps as much)."
    )
    print(
        f"{'family':<11} {'assignor':<19} {'scenarios':>9} {'steps':>5} {'kept ours/Java':>15} "
        f"{'fewer same':>10} {'fewer narrower':>14} {'more':>5} {'narrower':>8} {'wider':>5} "
        f"{'unbalanced':>10}"
    )
    scenarios = 0
    worse: dict[str, set[tuple[str, str, int, str]]] = {
        "fewer same": set(),
        "fewer narrower": set(),
    }
    for family in FAMILIES:
        for assignor in ASSIGNORS:
            count: Counter[str] = Counter()
            for seed in range(seeds):
                for driver in ("streamjoin", "kafka"):
                    scenarios += 1
                    for step in run_scenario(family, seed, assignor, java, driver=driver):
                        (ours, theirs), (our_spread, their_spread) = step.kept, step.spread
                        count["steps"] += 1
                        count["ours"] += ours
                        count["theirs"] += theirs
                        if ours < theirs:
                            kind = "fewer same" if our_spread >= their_spread else "fewer narrower"
                            count[kind] += 1
                            worse[kind].add((family, assignor, seed, driver))
                        count["more"] += ours > theirs
                        count["narrower"] += our_spread < their_spread
                        count["wider"] += our_spread > their_spread
                        count["unbalanced"] += not step.balanced[0]
            print(
                f"{family:<11} {assignor:<19} {2 * seeds:>9} {count['steps']:>5} "
                f"{count['ours']:>7}/{count['theirs']:<7} {count['fewer same']:>10} "
                f"{count['fewer narrower']:>14} {count['more']:>5} {count['narrower']:>8} "
                f"{count['wider']:>5} {count['unbalanced']:>10}"
            )
    print(
        f"scenarios with a step that keeps fewer: at the same spread {len(worse['fewer same'])}, "
        f"at a narrower one {len(worse['fewer narrower'])}, of {scenarios}"
    )


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1000x100000", help="members x partitions")
    parser.add_argument("--steps", default="fresh,leave,join", help=f"of {','.join(STEPS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=5, help="streamjoin's warm calls per process")
    parser.add_argument("--java-warm-ups", type=int, default=10)
    parser.add_argument("--java-timed", type=int, default=5)
    parser.add_argument("--churn-seeds", type=int, default=10)
    parser.add_argument("--no-churn", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    unknown = set(args.steps.split(",")) - set(STEPS)
    if unknown:
        parser.error(
            f"unknown step(s) {', '.join(sorted(unknown))}: choose from {', '.join(STEPS)}"
        )
    print(f"{os.cpu_count()} CPUs, load average {_load()} (figures under load are indicative)")
    try:
        java = KafkaAssignors()
    except (RuntimeError, StreamJoinError) as exc:  # no JDK, or no `make kafka-jars` yet
        parser.exit(2, f"error: {exc}\n")
    with java:
        args.kafka_version = java.version
        report(measure(args, java), args)
        if not args.no_churn:
            churn(java, args.churn_seeds)


if __name__ == "__main__":
    main()
