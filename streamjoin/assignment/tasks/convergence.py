"""Random clusters run to convergence and held to Kafka's rules: for the tests and the benchmark.

Kafka's TaskAssignorConvergenceTest perturbs random clusters (clients stop, start and come back
with their state) and requires each to settle within 2 x (S + S x standbys) rebalances, S being
the stateful tasks. `run_random_cluster` does that with more variety: capacities 1-4, 0-3
standbys, stateless and stateful tasks, changelog ends from 0 to 300,000, acceptable lags of 0,
100 or 50,000, and clients that report their running actives as RUNNING_ACTIVE (as Kafka
Streams does) or by offset. Every assignment must be valid and keep actives on clients that
may host them; once no follow-up is asked for, there are no learners, the load is balanced per
unit of capacity, and one more rebalance changes nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from streamjoin.assignment.tasks.assignor import assign_tasks
from streamjoin.assignment.tasks.checks import problems, spreads
from streamjoin.assignment.tasks.lags import compute_lags
from streamjoin.assignment.tasks.model import (
    RUNNING_ACTIVE,
    AssignorSettings,
    ClientState,
    TaskAssignment,
    TaskId,
)
from streamjoin.assignment.tasks.simulation import Cluster, clients_named, kafka_tasks

__all__ = (
    "ClusterFailure",
    "Outcome",
    "check_converged",
    "checked_rebalance",
    "converge_checked",
    "run_random_cluster",
)


class ClusterFailure(AssertionError):
    """A rule broken on the way to convergence, or no convergence within the bound."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One random cluster's run: its perturbations, the rebalances and the most any took."""

    events: int
    rebalances: int
    worst: int
    """The most rebalances one perturbation needed to converge."""
    bound: int
    """Kafka's bound per perturbation: 2 x (S + S x standbys)."""


class ReportingCluster(Cluster):
    """A cluster whose clients report the actives they run as RUNNING_ACTIVE."""

    def states(self) -> list[ClientState]:
        reported = []
        for state in super().states():
            offsets = dict(state.offset_sums)
            for task in state.previous_active & offsets.keys():
                offsets[task] = RUNNING_ACTIVE
            reported.append(
                ClientState(
                    state.process_id,
                    state.capacity,
                    state.previous_active,
                    state.previous_standby,
                    offsets,
                    state.draining,
                )
            )
        return reported


def converge_checked(cluster: Cluster, limit: int) -> int:
    """Rebalances until no follow-up is asked for, every one checked; how many it took."""
    for done in range(1, limit + 1):
        assignment = checked_rebalance(cluster)
        if not assignment.followup:
            check_converged(cluster, assignment)
            return done
    raise ClusterFailure(f"still asking for a follow-up after {limit} rebalances")


def checked_rebalance(cluster: Cluster) -> TaskAssignment:
    """One rebalance, held to validity and to the caught-up rule."""
    states = cluster.states()
    got = cluster.rebalance()
    found = problems(got, cluster.tasks, cluster.settings)
    if found:
        raise ClusterFailure(f"invalid assignment: {found}")
    lags = compute_lags(cluster.tasks, states, cluster.settings.acceptable_recovery_lag)
    for client, roles in got.clients.items():
        for task in roles.active:
            if task in lags and not lags[task].can_host(lags[task].lag(client)):
                raise ClusterFailure(f"{task} runs on {client}, which may not host it yet")
    return got


def check_converged(cluster: Cluster, assignment: TaskAssignment) -> None:
    """The rules for an assignment that asks for no follow-up."""
    if any(roles.learner for roles in assignment.clients.values()):
        raise ClusterFailure("converged with a learner still placed")
    capacities = {client: member.capacity for client, member in cluster.live.items()}
    spread = spreads(assignment, cluster.tasks, capacities)
    if spread.active > 1:
        raise ClusterFailure(f"converged with actives unbalanced per capacity: {spread}")
    # Per subtopology Kafka guarantees balance for equal capacities only.
    if len(set(capacities.values())) == 1 and spread.subtopology > 1:
        raise ClusterFailure(f"converged with a subtopology unbalanced: {spread}")
    if not _copies_capped(cluster, capacities) and spread.stateful > 1:
        raise ClusterFailure(f"converged with stateful copies unbalanced: {spread}")
    if cluster.rebalance() != assignment:
        raise ClusterFailure("a further rebalance changed a converged assignment")


def _copies_capped(cluster: Cluster, capacities: dict[str, int]) -> bool:
    """Whether a client's share of stateful copies exceeds the tasks it could hold one of each:
    then stateful balance cannot hold (capacities 1 and 4 with every task on both, say)."""
    stateful = sum(1 for spec in cluster.tasks if spec.stateful)
    copies = stateful * (1 + min(cluster.settings.num_standby_replicas, len(capacities) - 1))
    return max(capacities.values()) * copies > stateful * sum(capacities.values())


def run_random_cluster(seed: int) -> Outcome:
    """One random cluster through up to 12 perturbations; raises ClusterFailure on a breach."""
    prng = random.Random(seed)
    size = prng.randint(1, 12)
    stateful = prng.randint(1, 20)
    standbys = prng.randint(0, 3)
    choices: list[Callable[[TaskId], int] | int] = [
        150_000,
        lambda _task: prng.randint(0, 300_000),
        lambda _task: prng.choice([0, 10]),
    ]
    ends = prng.choice(choices)
    tasks = kafka_tasks(prng.randint(0, 12), stateful, lambda: prng.randint(1, 10), ends)
    settings = AssignorSettings(prng.choice([0, 100, 50_000]), prng.randint(1, stateful), standbys)
    kind = ReportingCluster if prng.random() < 0.5 else Cluster
    cluster = kind(tasks, settings, assign_tasks)
    uneven = prng.random() < 0.7
    names = iter(clients_named(1000))

    def start_new() -> None:
        cluster.add(next(names), prng.randint(1, 4) if uneven else 1)

    bound = 2 * (stateful + stateful * standbys)
    for _ in range(size):
        start_new()
    worst = rebalances = converge_checked(cluster, bound)
    events = prng.randint(1, 12)
    for _ in range(events):
        roll = prng.random()
        if roll < 0.4:
            for _ in range(prng.randint(0, size - 1)):
                if cluster.live:
                    cluster.stop(prng.choice(sorted(cluster.live)))
        elif roll < 0.8:
            for _ in range(prng.randint(0, size - 1)):
                if prng.random() < 0.5 or not cluster.stopped:
                    start_new()
                else:
                    cluster.add(prng.choice(sorted(cluster.stopped)))
        else:  # a rolling replacement: one client goes, a new one comes
            if cluster.live:
                cluster.stop(prng.choice(sorted(cluster.live)))
            start_new()
        if cluster.live:
            took = converge_checked(cluster, bound)
            rebalances += took
            worst = max(worst, took)
    return Outcome(events, rebalances, worst, bound)
