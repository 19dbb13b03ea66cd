"""A draining client (a worker stopping: SIGTERM, scale-in) hands its tasks off warm: nothing
new is placed on it, its stateless tasks move at once, a stateful one moves at once only to a
client caught up on it (a standby), else stays while its target learns, outside the warm-up
budget. Once it holds nothing, its leaving changes nobody else's tasks."""

from __future__ import annotations

import random

import pytest

from streamjoin.assignment.tasks import (
    AssignorSettings,
    ClientState,
    Role,
    TaskId,
    TaskSpec,
    Warmup,
    assign_tasks,
)
from streamjoin.assignment.tasks.checks import problems
from streamjoin.assignment.tasks.convergence import checked_rebalance, converge_checked
from streamjoin.assignment.tasks.simulation import Cluster, clients_named, kafka_tasks

END = 150_000
SIX = [TaskId(0, p) for p in range(6)]


def running(name: str, tasks: list[TaskId], *, draining: bool = False, **extra: int) -> ClientState:
    """A client running `tasks`, caught up on them; `extra`: task "0_p" -> its lag as standby."""
    standby = {TaskId.parse(t.removeprefix("t")): lag for t, lag in extra.items()}
    return ClientState(
        name,
        1,
        frozenset(tasks),
        frozenset(standby),
        {**dict.fromkeys(tasks, END), **{t: END - lag for t, lag in standby.items()}},
        draining,
    )


def test_a_draining_client_keeps_its_tasks_while_their_targets_learn_beyond_the_budget() -> None:
    clients = [
        running("c1", SIX[:2]),
        running("c2", SIX[2:4]),
        running("c3", SIX[4:], draining=True),
    ]
    settings = AssignorSettings(100, max_warmup_replicas=1)
    got = assign_tasks(clients, [TaskSpec(t, END) for t in SIX], settings)
    assert not problems(got, [TaskSpec(t, END) for t in SIX], settings)
    assert got.clients["c3"].active == tuple(SIX[4:]), "runs on until its targets caught up"
    assert got.clients["c3"].standby == got.clients["c3"].learner == ()
    learners = {t for c in ("c1", "c2") for t in got.clients[c].learner}
    assert learners == set(SIX[4:]), "both learn at once, though the budget is 1"
    assert {m.holder for m in got.pending} == {"c3"}
    assert got.clients["c1"].active == tuple(SIX[:2])
    assert got.clients["c2"].active == tuple(SIX[2:4])


def test_a_caught_up_standby_takes_a_draining_clients_task_at_once() -> None:
    clients = [
        running("c1", SIX[:2], t0_4=0),
        running("c2", SIX[2:4]),
        running("c3", SIX[4:], draining=True),
    ]
    settings = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=1)
    specs = [TaskSpec(t, END) for t in SIX]
    got = assign_tasks(clients, specs, settings)
    assert not problems(got, specs, settings)
    assert SIX[4] not in got.clients["c3"].active
    owner = next(c for c, roles in got.clients.items() if SIX[4] in roles.active)
    assert owner == "c1", "its caught-up standby runs it now"
    assert SIX[5] in got.clients["c3"].active, "no caught-up copy elsewhere: it stays"


def test_stateless_tasks_leave_a_draining_client_at_once() -> None:
    tasks = [TaskId(0, p) for p in range(4)]
    clients = [
        ClientState("c1", 1, frozenset(tasks[:2])),
        ClientState("c2", 1, frozenset(tasks[2:]), draining=True),
    ]
    got = assign_tasks(clients, [TaskSpec(t) for t in tasks])
    assert got.clients["c2"].active == ()
    assert got.clients["c1"].active == tuple(tasks)
    assert not got.followup


def test_when_every_client_drains_nobody_is_treated_as_draining() -> None:
    clients = [running("c1", SIX[:3], draining=True), running("c2", SIX[3:], draining=True)]
    got = assign_tasks(clients, [TaskSpec(t, END) for t in SIX])
    assert got.clients["c1"].active == tuple(SIX[:3])
    assert got.clients["c2"].active == tuple(SIX[3:])
    assert not got.followup and not got.draining


@pytest.mark.parametrize("seed", range(40))
def test_a_drained_client_ends_with_nothing_and_its_leaving_moves_nothing(seed: int) -> None:
    """Random clusters (capacities 1-3, 0-2 standbys, stateless and stateful tasks): one client
    drains. Every rebalance on the way is valid and runs each active on a client that may host
    it (so nothing moves cold); it converges within Kafka's bound with the draining client
    holding nothing; stopping it then changes no other client's roles."""
    prng = random.Random(seed)
    stateful = prng.randint(1, 16)
    standbys = prng.randint(0, 2)
    tasks = kafka_tasks(prng.randint(0, 6), stateful, lambda: prng.randint(1, 8))
    settings = AssignorSettings(prng.choice([0, 100]), prng.randint(1, 3), standbys)
    cluster = Cluster(tasks, settings, assign_tasks)
    names = list(clients_named(prng.randint(2, 6)))
    for name in names:
        cluster.add(name, prng.randint(1, 3))
    bound = 2 * (stateful + stateful * standbys)
    converge_checked(cluster, bound)
    leaving = prng.choice(names)
    cluster.drain(leaving)
    for _ in range(bound):
        got = checked_rebalance(cluster)
        if not got.followup:
            break
    else:
        raise AssertionError(f"still asking for a follow-up after {bound} rebalances")
    drained = got.clients[leaving]
    assert drained.active == drained.standby == drained.learner == ()
    cluster.stop(leaving)
    after = checked_rebalance(cluster)
    assert not after.followup
    assert dict(after.clients) == {c: r for c, r in got.clients.items() if c != leaving}


def test_moves_off_a_draining_client_are_learners_or_standby_swaps() -> None:
    clients = [running("c1", SIX[:3]), running("c2", SIX[3:], draining=True)]
    got = assign_tasks(clients, [TaskSpec(t, END) for t in SIX], AssignorSettings(0, 1, 0))
    assert {(m.role, m.warmup, m.holder, m.target) for m in got.pending} == {
        (Role.ACTIVE, Warmup.LEARNER, "c2", "c1")
    }
    assert len(got.pending) == 3
