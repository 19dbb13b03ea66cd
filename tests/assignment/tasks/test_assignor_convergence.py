"""Kafka's TaskAssignorConvergenceTest, ported with its numbers, plus streamjoin's own cases.

Between rebalances every client catches up on all it was given (`Cluster`). Every assignment
must be valid and keep actives on clients that may host them; once no follow-up is asked for,
there are no learners, the load is balanced per unit of capacity, and one more rebalance
changes nothing. Moves of stateful actives are counted against the canonical round-robin target
Kafka balances toward (a lower bound on what Kafka moves).

The randomized tests run fresh seeds for STREAMJOIN_CONVERGENCE_SECONDS (10 s by default; the
heterogeneous one half that, and both at least 50 seeds), starting from
STREAMJOIN_CONVERGENCE_SEED (random by default); a failure names the seed to reproduce.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from streamjoin.assignment.tasks import AssignorSettings, assign_tasks
from streamjoin.assignment.tasks.convergence import (
    checked_rebalance,
    converge_checked,
    run_random_cluster,
)
from streamjoin.assignment.tasks.round_robin_baseline import round_robin_assign
from streamjoin.assignment.tasks.simulation import (
    AssignFunction,
    Cluster,
    clients_named,
    kafka_tasks,
)

SECONDS = float(os.environ.get("STREAMJOIN_CONVERGENCE_SECONDS", "10"))
CLUSTERS = int(os.environ.get("STREAMJOIN_CONVERGENCE_CLUSTERS", "1000"))
"""Random clusters of the varied suite (about 20 s; bench/task_assignor.py --clusters runs more)."""
MIN_SEEDS = 50
"""Run at least this many, however slow the machine, so the move totals mean something."""
BASE_SEED = int(os.environ.get("STREAMJOIN_CONVERGENCE_SEED", random.randrange(2**32)))


def converge(cluster: Cluster, limit: int) -> int:
    """Rebalances until no follow-up is asked for (at most `limit`), every one checked.

    The round-robin baseline is not checked: it jumps to its target at once, in one rebalance.
    """
    if cluster.assign is round_robin_assign:
        cluster.rebalance()
        return 1
    return converge_checked(cluster, limit)


def test_static_assignment_converges_with_the_first_assignment() -> None:
    cluster = Cluster(kafka_tasks(1, 1, 1), AssignorSettings(100, 2, 0), assign_tasks)
    cluster.add("c0000")
    assert converge(cluster, 1) == 1


def test_adding_a_client_converges_within_kafkas_bound() -> None:
    settings = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=0)
    moves = {}
    for name, assign in (("sticky", assign_tasks), ("round-robin", round_robin_assign)):
        cluster = Cluster(kafka_tasks(7, 11, 5), settings, assign)
        cluster.add("c0000")
        converge(cluster, 1)
        cluster.add("c0001")
        # Kafka's bound: every task moves at most once, two at a time.
        converge(cluster, 11 // 2 + 1)
        moves[name] = cluster.moves
    # Half of 11 tasks have to move either way; the sticky target moves no more than that.
    assert moves == {"sticky": 5, "round-robin": 5}


def test_dropping_a_client_converges_within_kafkas_bound_moving_only_its_tasks() -> None:
    settings = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=0)
    moves = {}
    for name, assign in (("sticky", assign_tasks), ("round-robin", round_robin_assign)):
        cluster = Cluster(kafka_tasks(11, 13, 5), settings, assign)
        for client in clients_named(7):
            cluster.add(client)
        converge(cluster, 1)
        orphans = sum(1 for owner in cluster.owners.values() if owner == "c0000")
        cluster.stop("c0000")
        converge(cluster, 13 // 2 + 2)
        moves[name] = (cluster.moves, orphans)
    sticky_moves, orphans = moves["sticky"]
    assert sticky_moves == orphans == 2
    # Kafka's canonical layout shifts by one client: nearly every task moves.
    assert moves["round-robin"][0] == 13


@dataclass
class Totals:
    seeds: int = 0
    sticky_moves: int = 0
    round_robin_moves: int = 0


def run_random_scenario(seed: int, assign: AssignFunction, *, heterogeneous: bool) -> int:
    """Kafka's randomized cluster perturbations for one seed; the stateful actives moved."""
    prng = random.Random(seed)
    size = prng.randint(1, 10)
    stateless = prng.randint(1, 10)
    stateful = prng.randint(1, 10)
    warmups = prng.randint(1, stateful)
    standbys = prng.randint(0, 2 if heterogeneous else size)
    events = prng.randint(1, 10)
    end: Callable[..., int] | int = (
        (lambda _task: prng.randint(0, 300_000)) if heterogeneous else 150_000
    )
    tasks = kafka_tasks(stateless, stateful, lambda: prng.randint(1, 10), end)
    cluster = Cluster(tasks, AssignorSettings(100, warmups, standbys), assign)
    capacity = (lambda: prng.randint(1, 4)) if heterogeneous else (lambda: 1)
    names = iter(clients_named(1000))
    for _ in range(size):
        cluster.add(next(names), capacity())
    converge(cluster, 1)
    for _ in range(events):
        if prng.random() < 0.5:
            for _ in range(prng.randint(0, size - 1)):
                if cluster.live:
                    cluster.stop(prng.choice(sorted(cluster.live)))
        else:
            for _ in range(prng.randint(0, size - 1)):
                if prng.random() < 0.5 or not cluster.stopped:
                    cluster.add(next(names), capacity())
                else:
                    cluster.add(prng.choice(sorted(cluster.stopped)))
        if cluster.live:
            converge(cluster, 2 * (stateful + stateful * standbys))
    return cluster.moves


def run_for(seconds: float, *, heterogeneous: bool) -> Totals:
    totals = Totals()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or totals.seeds < MIN_SEEDS:
        seed = BASE_SEED + totals.seeds
        try:
            totals.sticky_moves += run_random_scenario(
                seed, assign_tasks, heterogeneous=heterogeneous
            )
        except BaseException as exc:
            kind = "heterogeneous" if heterogeneous else "uniform"
            raise AssertionError(
                f"{kind} random scenario failed; reproduce with "
                f"run_random_scenario({seed}, assign_tasks, heterogeneous={heterogeneous})"
            ) from exc
        totals.round_robin_moves += run_random_scenario(
            seed, round_robin_assign, heterogeneous=heterogeneous
        )
        totals.seeds += 1
    return totals


@pytest.mark.slow
def test_random_cluster_perturbations_converge_and_move_less_than_round_robin() -> None:
    totals = run_for(SECONDS, heterogeneous=False)
    print(
        f"{totals.seeds} seeds from {BASE_SEED}: sticky moved {totals.sticky_moves} actives, "
        f"round-robin target {totals.round_robin_moves}"
    )
    assert totals.seeds > 0
    assert totals.sticky_moves < totals.round_robin_moves


@pytest.mark.slow
def test_heterogeneous_capacities_standbys_and_end_offsets_converge() -> None:
    """Capacities 1-4, 0-2 standbys, end offsets from 0 to 300,000."""
    totals = run_for(SECONDS / 2, heterogeneous=True)
    print(f"{totals.seeds} heterogeneous seeds from {BASE_SEED}")
    assert totals.seeds > 0
    assert totals.sticky_moves < totals.round_robin_moves


@pytest.mark.parametrize("standbys", [0, 1, 2])
def test_scale_out_moves_only_the_new_clients_share(standbys: int) -> None:
    """10 clients become 11: the newcomer's share moves; round-robin reshuffles nearly all."""
    settings = AssignorSettings(max_warmup_replicas=2, num_standby_replicas=standbys)
    moves = {}
    rebalances = {}
    for name, assign in (("sticky", assign_tasks), ("round-robin", round_robin_assign)):
        cluster = Cluster(kafka_tasks(0, 100, 10), settings, assign)
        for client in clients_named(10):
            cluster.add(client)
        converge(cluster, 2)
        cluster.add("c0010")
        rebalances[name] = converge(cluster, 100)
        moves[name] = cluster.moves
    share = 100 // 11
    assert moves == {"sticky": share, "round-robin": 90}
    # The newcomer warms up its share of copies two at a time. With standbys its actives are
    # free: each warms up in the standby slot of the client that keeps running it meanwhile.
    learners = share * standbys if standbys else share
    assert rebalances["sticky"] == -(-learners // 2) + 1


def test_a_learner_that_is_not_caught_up_yet_keeps_its_target() -> None:
    """Real restores take several rebalances: the same target keeps warming up meanwhile."""
    settings = AssignorSettings(100, max_warmup_replicas=1, num_standby_replicas=0)
    cluster = Cluster(kafka_tasks(0, 4, 4), settings, assign_tasks)
    cluster.add("c0000")
    converge(cluster, 1)
    cluster.add("c0001")
    first = checked_rebalance(cluster)
    (learning,) = first.clients["c0001"].learner
    # c0001 restores only part of the changelog before the next rebalance.
    state = cluster.states()
    partial = {s.process_id: s for s in state}
    partial["c0001"] = type(partial["c0001"])(
        "c0001", 1, frozenset(), frozenset([learning]), {learning: 100_000}
    )
    second = assign_tasks(list(partial.values()), cluster.tasks, settings)
    assert second.clients["c0001"].learner == (learning,)
    assert second.clients["c0000"].active == first.clients["c0000"].active


@pytest.mark.slow
def test_varied_random_clusters_all_converge_balanced_within_kafkas_bound() -> None:
    """Capacities 1-4, 0-3 standbys, stateless and stateful tasks, changelog ends 0-300,000,
    RUNNING_ACTIVE reports: every cluster converges balanced within 2 x (S + S x standbys)."""
    for seed in range(BASE_SEED, BASE_SEED + CLUSTERS):
        try:
            outcome = run_random_cluster(seed)
        except AssertionError as exc:
            raise AssertionError(f"reproduce with run_random_cluster({seed})") from exc
        assert outcome.worst <= outcome.bound


def test_the_cluster_that_ended_unbalanced_now_converges_balanced() -> None:
    """Seed 514 ended "converged" with actives 1.33 apart per unit of capacity: stateless tasks
    placed around the stateful actives left a capacity-1 client short of its share (no extra
    could reach it; quotas._move_cell)."""
    outcome = run_random_cluster(514)
    assert outcome.worst <= outcome.bound
