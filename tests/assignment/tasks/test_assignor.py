"""The assignor as a whole: Kafka's HighAvailabilityTaskAssignor cases (research doc d.3), ported.

Kafka balances toward a canonical round-robin layout and warms it up; streamjoin's target is
sticky, so where Kafka's expected counts come from the round-robin target the test says how
and why streamjoin's answer differs.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from streamjoin.assignment.tasks import (
    RUNNING_ACTIVE,
    AssignorSettings,
    ClientState,
    Role,
    TaskAssignment,
    TaskId,
    TaskSpec,
    Warmup,
    assign_tasks,
)
from streamjoin.assignment.tasks.checks import problems, spreads
from streamjoin.assignment.tasks.lags import compute_lags

END = 150_000
NINE = [TaskId(s, p) for s in range(3) for p in range(3)]
FOUR = [TaskId(0, p) for p in range(4)]


def stateful(tasks: list[TaskId], end: int = END) -> list[TaskSpec]:
    return [TaskSpec(task, end) for task in tasks]


def client(
    name: str,
    capacity: int = 1,
    *,
    active: list[TaskId] | None = None,
    standby: list[TaskId] | None = None,
    lag: dict[TaskId, int] | None = None,
    end: int = END,
) -> ClientState:
    """A client with the given lags (local state `end - lag`) on its tasks."""
    return ClientState(
        name,
        capacity,
        frozenset(active or ()),
        frozenset(standby or ()),
        {task: end - behind for task, behind in (lag or {}).items()},
    )


def caught_up(tasks: list[TaskId]) -> dict[TaskId, int]:
    return dict.fromkeys(tasks, 0)


def copies(assignment: TaskAssignment, name: str) -> int:
    roles = assignment.clients[name]
    return len(roles.active) + len(roles.standby) + len(roles.learner)


def test_sticky_for_actives_and_standbys_while_warming_up() -> None:
    """Kafka: c1 and c2 keep a copy of every task, c3 gets exactly the 2 warm-ups.

    Here too c1 and c2 keep all nine tasks hot, and c2 (within the acceptable lag) takes its
    share of actives at once. c3's three actives warm up in the standby slots c1 hands over
    (free, as in Kafka's swap with a caught-up standby) while c1 runs them; its standby share
    costs the two learners, and the third waits.
    """
    clients = [
        client("c1", active=NINE, lag=caught_up(NINE)),
        client("c2", standby=NINE, lag=dict.fromkeys(NINE, 10)),
        client("c3"),
    ]
    config = AssignorSettings(11, max_warmup_replicas=2, num_standby_replicas=1)
    result = assign_tasks(clients, stateful(NINE), config)
    assert copies(result, "c1") == 9
    assert len(result.clients["c2"].active) == 3
    assert not result.clients["c3"].active
    assert len(result.clients["c3"].learner) == 2
    assert result.followup
    assert not problems(result, stateful(NINE), config)
    hot = {t for name in ("c1", "c2") for t in result.clients[name].active}
    assert hot | set(result.clients["c1"].standby) | set(result.clients["c2"].standby) == set(NINE)


def test_no_warm_ups_when_any_lag_is_acceptable() -> None:
    clients = [client("c1", active=NINE, lag=caught_up(NINE)), client("c2"), client("c3")]
    config = AssignorSettings(2**63 - 1, max_warmup_replicas=1, num_standby_replicas=1)
    result = assign_tasks(clients, stateful(NINE), config)
    assert [copies(result, name) for name in ("c1", "c2", "c3")] == [6, 6, 6]
    assert [len(result.clients[n].active) for n in ("c1", "c2", "c3")] == [3, 3, 3]
    assert not result.followup


def test_warms_up_idle_clients_balanced_per_thread_but_not_per_client() -> None:
    """KAFKA-9173: one client with enough threads must not keep every task."""
    clients = [
        client("c1", 5, active=FOUR, lag=caught_up(FOUR)),
        client("c2", 5),
        client("c3", 5),
    ]
    config = AssignorSettings(0, max_warmup_replicas=2)
    result = assign_tasks(clients, stateful(FOUR), config)
    assert result.followup
    assert result.clients["c2"].learner and result.clients["c3"].learner
    assert not problems(result, stateful(FOUR), config)


def test_warmed_up_clients_take_their_tasks_and_the_result_is_balanced() -> None:
    clients = [
        client("c1", 5, active=FOUR, lag=caught_up(FOUR)),
        client("c2", 5, standby=[FOUR[1]], lag=caught_up([FOUR[1]])),
        client("c3", 5, standby=[FOUR[2]], lag=caught_up([FOUR[2]])),
    ]
    result = assign_tasks(clients, stateful(FOUR), AssignorSettings(0, 2))
    assert not result.followup
    assert result.clients["c2"].active == (FOUR[1],)
    assert result.clients["c3"].active == (FOUR[2],)
    assert spreads(result, stateful(FOUR), {"c1": 5, "c2": 5, "c3": 5}).balanced()


def test_nobody_caught_up_and_equal_lags_splits_by_capacity() -> None:
    clients = [
        client("c1", 6, lag=dict.fromkeys(NINE, 10)),
        client("c2", 3, lag=dict.fromkeys(NINE, 10)),
    ]
    result = assign_tasks(clients, stateful(NINE), AssignorSettings(0, 2))
    assert [len(result.clients[n].active) for n in ("c1", "c2")] == [6, 3]
    assert not result.followup


def test_active_leaves_a_client_that_is_not_caught_up() -> None:
    """Kafka's target puts 0_0 back on c1 and warms it up there (follow-up); the sticky target
    goes straight to c2, which has the state, so nothing is left to warm up."""
    t00, t01 = TaskId(0, 0), TaskId(0, 1)
    clients = [
        client("c1", active=[t00], lag={t00: 500}),
        client("c2", active=[t01], lag={t00: 0}),
    ]
    result = assign_tasks(clients, [TaskSpec(t00, END), TaskSpec(t01)], AssignorSettings(100, 2))
    assert result.clients["c1"].active == (t01,)
    assert result.clients["c2"].active == (t00,)
    assert not result.followup


def test_most_caught_up_client_runs_the_task_when_none_is_caught_up() -> None:
    """KAFKA-13600. Kafka targets c1 (first id) and warms it up; the sticky target is c3 itself,
    the standby the next most caught-up client, and no warm-up is needed."""
    t00 = TaskId(0, 0)
    clients = [client("c1"), client("c2", lag={t00: 1000}), client("c3", lag={t00: 500})]
    config = AssignorSettings(100, 2, num_standby_replicas=1)
    result = assign_tasks(clients, [TaskSpec(t00, END)], config)
    assert result.clients["c3"].active == (t00,)
    assert result.clients["c2"].standby == (t00,)
    assert not result.followup


def test_warm_ups_are_capped_and_the_rest_wait() -> None:
    clients = [client("c1", active=FOUR, lag=caught_up(FOUR)), client("c2")]
    result = assign_tasks(clients, stateful(FOUR), AssignorSettings(100, max_warmup_replicas=1))
    assert len(result.clients["c1"].active) == 4
    assert len(result.clients["c2"].learner) == 1
    assert not result.clients["c2"].standby
    assert [move.warmup for move in result.pending] == [Warmup.LEARNER, Warmup.WAITING]
    assert result.followup


def test_standbys_take_no_warm_up_budget() -> None:
    """The target's standby slots carry its warm-up: four standbys on c2, no extra copy."""
    clients = [client("c1", active=FOUR, lag=caught_up(FOUR)), client("c2")]
    config = AssignorSettings(100, max_warmup_replicas=1, num_standby_replicas=1)
    result = assign_tasks(clients, stateful(FOUR), config)
    assert result.clients["c2"].standby == tuple(FOUR)
    assert not result.clients["c2"].learner
    assert len(result.clients["c1"].active) == 4
    assert {move.warmup for move in result.pending} == {Warmup.STANDBY}
    assert result.followup


def test_a_single_client_gets_no_standbys() -> None:
    clients = [client("c1", active=FOUR, lag=caught_up(FOUR))]
    result = assign_tasks(clients, stateful(FOUR), AssignorSettings(100, 2, 1))
    assert result.clients["c1"].active == tuple(FOUR)
    assert not result.clients["c1"].standby
    assert not result.followup


def test_a_cold_single_client_runs_everything() -> None:
    result = assign_tasks([client("c1")], stateful(FOUR[:2]), AssignorSettings(100, 2))
    assert result.clients["c1"].active == tuple(FOUR[:2])
    assert not result.followup


def test_every_client_gets_a_task_whatever_its_capacity_share() -> None:
    clients = [
        client(name, capacity, lag=caught_up(NINE))
        for name, capacity in (("c1", 100), ("c2", 50), ("c3", 1))
    ]
    result = assign_tasks(clients, stateful(NINE), AssignorSettings(100, 2))
    assert all(roles.active for roles in result.clients.values())
    assert len(result.clients["c3"].active) == 1
    assert not result.followup


def test_stateless_tasks_even_out_the_actives_while_stateful_ones_warm_up() -> None:
    """As in Kafka, stateless tasks go where the stateful actives are not (B3 broken on
    purpose while c2 warms up)."""
    stateless = [TaskSpec(TaskId(1, p)) for p in range(3)]
    clients = [client("c1", active=FOUR, lag=caught_up(FOUR)), client("c2")]
    config = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=1)
    tasks = stateful(FOUR) + stateless
    result = assign_tasks(clients, tasks, config)
    assert not problems(result, tasks, config)
    assert result.followup
    assert len(result.clients["c1"].active) == 4
    assert result.clients["c2"].active == tuple(spec.task for spec in stateless)
    spread = spreads(result, tasks, {"c1": 1, "c2": 1})
    assert spread.active <= 1
    assert spread.stateful <= 1


def test_a_balanced_previous_assignment_is_kept() -> None:
    """Kafka keeps it only because it equals the canonical layout; any balanced one is kept."""
    for c1_tasks in ([FOUR[0], FOUR[2]], [FOUR[2], FOUR[3]]):
        c2_tasks = [task for task in FOUR if task not in c1_tasks]
        clients = [
            client("c1", active=c1_tasks, lag=caught_up(c1_tasks)),
            client("c2", active=c2_tasks, lag=caught_up(c2_tasks)),
        ]
        result = assign_tasks(clients, stateful(FOUR), AssignorSettings(100, 2))
        assert result.clients["c1"].active == tuple(c1_tasks)
        assert result.clients["c2"].active == tuple(c2_tasks)
        assert not result.followup


def test_swapping_with_a_caught_up_standby_costs_no_budget() -> None:
    """TaskMovementTest: the target's standby slot goes to the target, the holder runs on."""
    t00 = TaskId(0, 0)
    tasks = stateful([t00, TaskId(0, 1)])
    clients = [
        client("c1", active=[t00, TaskId(0, 1)], lag=caught_up([t00, TaskId(0, 1)])),
        client("c2"),
    ]
    config = AssignorSettings(100, max_warmup_replicas=1, num_standby_replicas=1)
    result = assign_tasks(clients, tasks, config)
    (move,) = result.pending
    assert (move.role, move.holder, move.target, move.warmup) == (
        Role.ACTIVE,
        "c1",
        "c2",
        Warmup.STANDBY,
    )
    assert not any(roles.learner for roles in result.clients.values())


def test_a_move_warming_up_in_a_standby_slot_is_a_warm_up_of_its_target() -> None:
    """Scale-out with standbys: the newcomer restores the tasks bound for it as standbys (no
    learner anywhere), and those are what it must watch to ask for the follow-up."""
    clients = [client("c1", active=FOUR, lag=caught_up(FOUR)), client("c2")]
    config = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=1)
    result = assign_tasks(clients, stateful(FOUR), config)
    bound_for_c2 = {move.task for move in result.pending if move.target == "c2"}
    assert len(bound_for_c2) == 2
    assert not any(roles.learner for roles in result.clients.values())
    assert result.warming_up("c2") == bound_for_c2
    assert bound_for_c2 <= set(result.clients["c2"].standby)
    assert result.warming_up("c1") == frozenset()
    # Once c2 has caught up on them, they move at once and nothing is pending.
    c2_caught_up = client("c2", standby=FOUR, lag=caught_up(FOUR))
    after = assign_tasks([clients[0], c2_caught_up], stateful(FOUR), config)
    assert set(after.clients["c2"].active) == bound_for_c2
    assert not after.followup


def test_a_caught_up_standby_takes_its_task_without_a_warm_up() -> None:
    """KIP-441: a target that already holds a caught-up standby needs no warm-up."""
    clients = [
        client("c1", active=FOUR, lag=caught_up(FOUR)),
        client("c2", standby=FOUR, lag=caught_up(FOUR)),
    ]
    config = AssignorSettings(100, max_warmup_replicas=2, num_standby_replicas=1)
    result = assign_tasks(clients, stateful(FOUR), config)
    assert len(result.clients["c2"].active) == 2
    assert not result.followup


def test_running_active_sentinel_counts_as_caught_up() -> None:
    t00 = TaskId(0, 0)
    clients = [
        ClientState("c1", offset_sums={t00: RUNNING_ACTIVE}),
        client("c2", lag={t00: 20_000}),
    ]
    result = assign_tasks(clients, stateful([t00]), AssignorSettings())
    assert result.clients["c1"].active == (t00,)
    assert not result.followup


def test_tasks_no_longer_in_the_topology_are_ignored() -> None:
    gone = TaskId(9, 9)
    clients = [client("c1", active=[gone, FOUR[0]], lag={gone: 0, FOUR[0]: 0})]
    result = assign_tasks(clients, stateful(FOUR[:1]), AssignorSettings())
    assert result.clients["c1"].active == (FOUR[0],)


def test_no_clients_no_assignment() -> None:
    assert assign_tasks([], stateful(FOUR)) == TaskAssignment({})


# --- properties over random inputs ---------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[ClientState], list[TaskSpec], AssignorSettings]:
    names = [f"c{i}" for i in range(draw(st.integers(1, 6)))]
    specs = []
    for subtopology in range(draw(st.integers(1, 3))):
        is_stateful = draw(st.booleans())
        for partition in range(draw(st.integers(1, 6))):
            end = draw(st.integers(0, 300_000)) if is_stateful else None
            specs.append(TaskSpec(TaskId(subtopology, partition), end))
    ends = {spec.task: spec.end_offset_sum for spec in specs if spec.stateful}
    clients = []
    for name in names:
        owned = draw(st.sets(st.sampled_from([spec.task for spec in specs])))
        active = {task for task in owned if draw(st.booleans())}
        offsets = {
            task: draw(st.one_of(st.just(RUNNING_ACTIVE), st.integers(0, ends[task] + 1000)))
            for task in owned
            if task in ends
        }
        clients.append(
            ClientState(
                name, draw(st.integers(1, 4)), frozenset(active), frozenset(owned - active), offsets
            )
        )
    config = AssignorSettings(
        draw(st.sampled_from([0, 100, 10_000, 2**63 - 1])),
        draw(st.integers(1, 4)),
        draw(st.integers(0, 2)),
    )
    return clients, specs, config


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.randoms(use_true_random=False))
def test_deterministic_valid_and_caught_up_whatever_the_input_order(
    scenario: tuple[list[ClientState], list[TaskSpec], AssignorSettings], shuffler: random.Random
) -> None:
    clients, specs, config = scenario
    result = assign_tasks(clients, specs, config)
    shuffled_clients, shuffled_specs = list(clients), list(specs)
    shuffler.shuffle(shuffled_clients)
    shuffler.shuffle(shuffled_specs)
    assert assign_tasks(shuffled_clients, shuffled_specs, config) == result
    assert not problems(result, specs, config)
    lags = compute_lags(specs, clients, config.acceptable_recovery_lag)
    for name, roles in result.clients.items():
        for task in roles.active:
            if task in lags:
                assert lags[task].can_host(lags[task].lag(name))
    if config.acceptable_recovery_lag == 2**63 - 1:
        assert not result.followup
    for move in result.pending:
        holder = result.clients[move.holder]
        assert move.task in (holder.active if move.role is Role.ACTIVE else holder.standby)
        target = result.clients[move.target]
        held = {
            Warmup.LEARNER: target.learner,
            Warmup.STANDBY: target.standby,
            Warmup.WAITING: target.active + target.standby + target.learner,
        }[move.warmup]
        assert (move.task in held) == (move.warmup is not Warmup.WAITING)
