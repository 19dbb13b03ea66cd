"""Task assignor benchmark: Kafka's four scale shapes, and task moves on a scale-out.

Kafka Streams' StreamsAssignmentScaleTest requires one assignment to finish within 120 s for
6,000 tasks / 2 clients, 1,000 / 1,000, 1,000 / 100 with 50 standbys and 1,000 tasks over 10
clients with 1,000 threads each. This times streamjoin's assignor on the same shapes, cold
(nobody has state) and warm (the rebalance after that one, everyone caught up), then counts the
stateful actives moved when 10 clients become 11, against the canonical round-robin target
Kafka balances toward, measured in the same run.

`--clusters N` instead runs N random clusters (convergence.run_random_cluster: capacities 1-4,
0-3 standbys, stateless and stateful tasks, clients stopping, starting and coming back) and
counts those that converged balanced within Kafka's bound of 2 x (S + S x standbys) rebalances.

Run: python bench/task_assignor.py [--repeat N] [--clusters N [--seed S]]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from streamjoin.assignment.tasks import AssignorSettings, TaskId, TaskSpec, assign_tasks
from streamjoin.assignment.tasks.convergence import ClusterFailure, run_random_cluster
from streamjoin.assignment.tasks.round_robin_baseline import round_robin_assign
from streamjoin.assignment.tasks.simulation import AssignFunction, Cluster, clients_named

_PARTITIONS = 100
"""Partitions per subtopology: 6,000 tasks are 60 subtopologies, 1,000 tasks 10."""


@dataclass(frozen=True)
class Shape:
    tasks: int
    clients: int
    slots: int
    standbys: int

    def __str__(self) -> str:
        slots = f" x {self.slots} slots" if self.slots > 1 else ""
        return f"{self.tasks} tasks / {self.clients} clients{slots} / {self.standbys} standbys"


SHAPES = (
    Shape(6000, 2, 1, 1),
    Shape(1000, 1000, 1, 1),
    Shape(1000, 100, 1, 50),
    Shape(1000, 10, 1000, 1),
)


def stateful_tasks(count: int) -> list[TaskSpec]:
    """`count` stateful tasks with uneven changelogs (100k to 200k offsets)."""
    return [
        TaskSpec(TaskId(n // _PARTITIONS, n % _PARTITIONS), 100_000 + (n * 7_919) % 100_000)
        for n in range(count)
    ]


def time_shape(shape: Shape, repeat: int) -> tuple[float, float, float]:
    """Median milliseconds of a cold and a warm assignment, and of the round-robin target."""
    settings = AssignorSettings(num_standby_replicas=shape.standbys)
    samples: dict[str, list[float]] = {"cold": [], "warm": [], "round-robin": []}
    for _ in range(repeat):
        cluster = Cluster(stateful_tasks(shape.tasks), settings, assign_tasks)
        for client in clients_named(shape.clients):
            cluster.add(client, shape.slots)
        for phase in ("cold", "warm"):
            samples[phase].append(_timed(assign_tasks, cluster))
            cluster.rebalance()
        samples["round-robin"].append(_timed(round_robin_assign, cluster))
    cold, warm, baseline = (statistics.median(samples[k]) for k in samples)
    return cold, warm, baseline


def _timed(assign: AssignFunction, cluster: Cluster) -> float:
    states = cluster.states()
    started = time.perf_counter()
    assign(states, cluster.tasks, cluster.settings)
    return (time.perf_counter() - started) * 1000


def scale_out(assign: AssignFunction, tasks: int, standbys: int) -> tuple[int, int]:
    """Stateful actives moved, and rebalances run, while 10 clients become 11 and settle."""
    settings = AssignorSettings(num_standby_replicas=standbys)
    cluster = Cluster(stateful_tasks(tasks), settings, assign)
    for client in clients_named(10):
        cluster.add(client)
    cluster.converge(limit=2)
    moves_before, rebalances_before = cluster.moves, cluster.rebalances
    cluster.add("c0010")
    cluster.converge(limit=tasks)
    return cluster.moves - moves_before, cluster.rebalances - rebalances_before


def random_clusters(count: int, first_seed: int) -> None:
    """Run `count` random clusters; print how many converged balanced, and the failures."""
    started = time.perf_counter()
    failures: list[tuple[int, str]] = []
    events = rebalances = 0
    worst_ratio = 0.0
    for seed in range(first_seed, first_seed + count):
        try:
            outcome = run_random_cluster(seed)
        except ClusterFailure as exc:
            failures.append((seed, str(exc)))
            continue
        events += outcome.events + 1
        rebalances += outcome.rebalances
        worst_ratio = max(worst_ratio, outcome.worst / outcome.bound)
    passed = count - len(failures)
    print(
        f"{count} random clusters from seed {first_seed}: {passed} ({100 * passed / count:.2f}%) "
        f"converged balanced within Kafka's bound, in {time.perf_counter() - started:.0f} s"
    )
    print(
        f"  {events} perturbations, {rebalances / max(events, 1):.2f} rebalances each on "
        f"average; the slowest used {100 * worst_ratio:.0f}% of its bound"
    )
    for seed, reason in failures:
        print(f"  FAILED run_random_cluster({seed}): {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape (median shown)")
    parser.add_argument("--clusters", type=int, help="run this many random clusters instead")
    parser.add_argument("--seed", type=int, default=0, help="first seed for --clusters")
    args = parser.parse_args()
    if args.clusters:
        random_clusters(args.clusters, args.seed)
        return
    print("time per assignment (Kafka's bound: 120 s; round-robin = computing its target alone)")
    for shape in SHAPES:
        cold, warm, baseline = time_shape(shape, args.repeat)
        print(
            f"  {shape!s:<50} cold {cold:7.1f} ms   warm {warm:7.1f} ms   "
            f"round-robin {baseline:6.1f} ms   warm/round-robin {warm / baseline:5.1f}x"
        )
    print()
    print("scale-out 10 -> 11 clients: stateful actives moved until settled")
    for tasks, standbys in ((1000, 0), (1000, 1)):
        sticky, rebalances = scale_out(assign_tasks, tasks, standbys)
        canonical, _ = scale_out(round_robin_assign, tasks, standbys)
        print(
            f"  {tasks} tasks, {standbys} standbys: streamjoin {sticky} moves "
            f"({rebalances} rebalances)   round-robin target {canonical} moves   "
            f"ratio {sticky / canonical:.2f}"
        )


if __name__ == "__main__":
    main()
