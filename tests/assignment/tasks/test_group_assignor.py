"""The task assignor behind the consumer group: SubscriptionInfo in, partitions and roles out."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from streamjoin.assignment.model import Subscription, TopicPartition
from streamjoin.assignment.task_metadata import (
    NO_PROBE,
    QueryHost,
    SubscriptionInfo,
    decode_assignment_info,
    encode_subscription_info,
)
from streamjoin.assignment.tasks.group_assignor import Subtopology, TaskPartitionAssignor
from streamjoin.assignment.tasks.model import AssignorSettings, TaskId

TOPICS = ("imps", "clicks")
COUNTS = {"imps": 2, "clicks": 2}


def make(ends: Mapping[TaskId, int] | None, lag: int = 0) -> TaskPartitionAssignor:
    async def end_offsets(tasks: Sequence[TaskId]) -> Mapping[TaskId, int]:
        if ends is None:
            raise TimeoutError("broker too slow")
        return {t: ends[t] for t in tasks}

    return TaskPartitionAssignor(
        [Subtopology(TOPICS)],
        AssignorSettings(acceptable_recovery_lag=lag),
        member_info=lambda: SubscriptionInfo("unused"),
        end_offsets=end_offsets,
        clock=lambda: 1_000.0,
    )


def member(
    process: str,
    owned: Sequence[int] = (),
    sums: Mapping[TaskId, int] | None = None,
    lags: Mapping[TaskId, int] | None = None,
    query_url: str | None = None,
    *,
    draining: bool = False,
) -> Subscription:
    info = SubscriptionInfo(
        process,
        endpoint=f"{process}:9100",
        offset_sums=dict(sums or {}),
        lags=dict(lags or {}),
        query_url=query_url,
        draining=draining,
    )
    partitions = tuple(TopicPartition(t, p) for p in owned for t in TOPICS)
    return Subscription(TOPICS, encode_subscription_info(info), partitions)


def run(
    assignor: TaskPartitionAssignor, subscriptions: dict[str, Subscription]
) -> dict[str, object]:
    asyncio.run(assignor.before_assign(COUNTS, subscriptions))
    return dict(assignor.assign(COUNTS, subscriptions))


def test_a_new_worker_learns_while_the_owner_keeps_the_task() -> None:
    ends = {TaskId(0, 0): 500, TaskId(0, 1): 700}
    assignor = make(ends)
    subscriptions = {
        "m-old": member("old", owned=(0, 1), sums={TaskId(0, 0): -2, TaskId(0, 1): -2}),
        "m-new": member("new"),
    }
    result = run(assignor, subscriptions)
    old, new = result["m-old"], result["m-new"]
    assert {tp.partition for tp in old.partitions} == {0, 1}  # type: ignore[attr-defined]
    assert new.partitions == ()  # type: ignore[attr-defined]
    told = decode_assignment_info(new.user_data)  # type: ignore[attr-defined]
    assert len(told.learner) == 1 and told.active == ()
    assert told.next_probe_ms == 1_000_000 + 600_000
    assert decode_assignment_info(old.user_data).partitions_by_host["old:9100"]  # type: ignore[attr-defined]


def test_a_move_warming_up_in_a_standby_slot_is_told_as_a_warm_up() -> None:
    ends = {TaskId(0, 0): 500, TaskId(0, 1): 700}
    assignor = make(ends)
    assignor.settings = AssignorSettings(acceptable_recovery_lag=0, num_standby_replicas=1)
    subscriptions = {
        "m-old": member("old", owned=(0, 1), sums={TaskId(0, 0): -2, TaskId(0, 1): -2}),
        "m-new": member("new"),
    }
    told = decode_assignment_info(run(assignor, subscriptions)["m-new"].user_data)  # type: ignore[attr-defined]
    assert told.learner == () and len(told.standby) == 2
    assert len(told.warmup) == 1 and set(told.warmup) < set(told.standby)
    old = decode_assignment_info(run(assignor, subscriptions)["m-old"].user_data)  # type: ignore[attr-defined]
    assert old.warmup == ()


def test_a_draining_worker_is_told_so_and_keeps_its_tasks_while_they_are_learned() -> None:
    ends = {TaskId(0, 0): 500, TaskId(0, 1): 700}
    assignor = make(ends)
    subscriptions = {
        "m-a": member("a", owned=(0,), sums={TaskId(0, 0): -2}),
        "m-b": member("b", owned=(1,), sums={TaskId(0, 1): -2}, draining=True),
    }
    result = run(assignor, subscriptions)
    leaving = decode_assignment_info(result["m-b"].user_data)  # type: ignore[attr-defined]
    staying = decode_assignment_info(result["m-a"].user_data)  # type: ignore[attr-defined]
    assert (leaving.draining, staying.draining) == (True, False)
    assert leaving.active == (TaskId(0, 1),) and staying.learner == (TaskId(0, 1),)
    assert staying.warmup == (TaskId(0, 1),)
    # Caught up: the task moves, the draining worker holds nothing and may leave.
    subscriptions["m-a"] = member(
        "a", owned=(0,), sums={TaskId(0, 0): -2, TaskId(0, 1): 700}, draining=False
    )
    result = run(assignor, subscriptions)
    leaving = decode_assignment_info(result["m-b"].user_data)  # type: ignore[attr-defined]
    assert leaving.draining and leaving.active == leaving.standby == leaving.learner == ()
    assert result["m-b"].partitions == ()  # type: ignore[attr-defined]


def test_a_draining_worker_alone_is_not_taken_as_draining() -> None:
    assignor = make({TaskId(0, 0): 5, TaskId(0, 1): 7})
    result = run(assignor, {"m-b": member("b", owned=(0, 1), draining=True)})
    told = decode_assignment_info(result["m-b"].user_data)  # type: ignore[attr-defined]
    assert not told.draining and len(told.active) == 2


def test_a_caught_up_learner_is_promoted() -> None:
    ends = {TaskId(0, 0): 500, TaskId(0, 1): 700}
    assignor = make(ends)
    subscriptions = {
        "m-old": member("old", owned=(0, 1), sums={TaskId(0, 0): -2, TaskId(0, 1): -2}),
        "m-new": member("new", sums={TaskId(0, 1): 700}),
    }
    result = run(assignor, subscriptions)
    told_new = decode_assignment_info(result["m-new"].user_data)  # type: ignore[attr-defined]
    assert told_new.active == (TaskId(0, 1),) and told_new.learner == ()
    assert told_new.next_probe_ms == NO_PROBE
    assert {tp.partition for tp in result["m-new"].partitions} == {1}  # type: ignore[attr-defined]


def test_unknown_end_offsets_keep_the_actives_and_schedule_a_follow_up() -> None:
    assignor = make(None)
    subscriptions = {
        "m-old": member("old", owned=(0, 1), sums={TaskId(0, 0): -2, TaskId(0, 1): -2}),
        "m-new": member("new"),
    }
    result = run(assignor, subscriptions)
    assert {tp.partition for tp in result["m-old"].partitions} == {0, 1}  # type: ignore[attr-defined]
    told = decode_assignment_info(result["m-new"].user_data)  # type: ignore[attr-defined]
    assert told.next_probe_ms != NO_PROBE


def test_undecodable_user_data_is_a_new_process_not_a_crash() -> None:
    assignor = make({TaskId(0, 0): 0, TaskId(0, 1): 0})
    subscriptions = {"m-bad": Subscription(TOPICS, b"\x00\x07garbage"), "m-ok": member("ok")}
    result = run(assignor, subscriptions)
    assigned = sorted(tp for a in result.values() for tp in a.partitions)  # type: ignore[attr-defined]
    assert assigned == sorted(TopicPartition(t, p) for t in TOPICS for p in (0, 1))


def test_the_lag_a_learner_saw_counts_not_its_offset_sum_gone_stale_while_joining() -> None:
    """The active kept writing while the JoinGroup was held: end 900 now, the learner reported
    offset sum 500 with lag 50 at that moment. It is caught up within 100, so it is promoted."""
    ends = {TaskId(0, 0): 900, TaskId(0, 1): 900}
    assignor = make(ends, lag=100)
    subscriptions = {
        "m-old": member("old", owned=(0, 1), sums={TaskId(0, 0): -2, TaskId(0, 1): -2}),
        "m-new": member("new", sums={TaskId(0, 1): 500}, lags={TaskId(0, 1): 50}),
    }
    told = decode_assignment_info(run(assignor, subscriptions)["m-new"].user_data)  # type: ignore[attr-defined]
    assert told.active == (TaskId(0, 1),) and told.learner == ()


def test_a_host_of_two_processes_gets_twice_the_tasks_of_a_host_of_one_spread_over_both() -> None:
    counts = {"imps": 12, "clicks": 12}
    ends = {TaskId(0, p): 0 for p in range(12)}
    assignor = make(ends)
    subscriptions = {
        "two-a": member("two"),
        "two-b": member("two"),
        "one-a": member("one"),
    }
    asyncio.run(assignor.before_assign(counts, subscriptions))
    told = {
        m: decode_assignment_info(a.user_data)
        for m, a in assignor.assign(counts, subscriptions).items()
    }
    assert [len(told[m].active) for m in ("two-a", "two-b", "one-a")] == [4, 4, 4]
    assert assignor.last_plan is not None
    assert {c: len(r.active) for c, r in assignor.last_plan.clients.items()} == {"two": 8, "one": 4}


def test_a_task_stays_on_the_member_of_a_host_that_ran_it() -> None:
    counts = {"imps": 4, "clicks": 4}
    ends = {TaskId(0, p): 0 for p in range(4)}
    assignor = make(ends)
    subscriptions = {"h-a": member("h", owned=[3, 1]), "h-b": member("h", owned=[0, 2])}
    asyncio.run(assignor.before_assign(counts, subscriptions))
    told = {
        m: decode_assignment_info(a.user_data)
        for m, a in assignor.assign(counts, subscriptions).items()
    }
    assert told["h-a"].active == (TaskId(0, 1), TaskId(0, 3))
    assert told["h-b"].active == (TaskId(0, 0), TaskId(0, 2))


@settings(max_examples=40, deadline=None)
@given(
    hosts=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    partitions=st.integers(1, 24),
)
@example(hosts=[1, 1, 1, 3], partitions=4)  # found in CI: four hosts, one task each
def test_a_new_group_spreads_tasks_by_host_capacity_then_over_each_hosts_processes(
    hosts: list[int], partitions: int
) -> None:
    counts = {"imps": partitions, "clicks": partitions}
    assignor = make({TaskId(0, p): 0 for p in range(partitions)})
    subscriptions = {
        f"h{h}-{m}": member(f"h{h}") for h, processes in enumerate(hosts) for m in range(processes)
    }
    asyncio.run(assignor.before_assign(counts, subscriptions))
    told = {
        m: len(decode_assignment_info(a.user_data).active)
        for m, a in assignor.assign(counts, subscriptions).items()
    }
    assert sum(told.values()) == partitions
    every_host_gets_one = partitions >= len(hosts)  # whatever its share (active_placement.py)
    for h, processes in enumerate(hosts):
        mine = [told[f"h{h}-{m}"] for m in range(processes)]
        share = partitions * processes / sum(hosts)
        if every_host_gets_one:
            assert sum(mine) >= 1
        if not every_host_gets_one or min(partitions * p / sum(hosts) for p in hosts) >= 1:
            assert abs(sum(mine) - share) < 1
        assert max(mine) - min(mine) <= 1


def test_every_member_learns_where_each_task_is_active_and_standby_for_queries() -> None:
    """Interactive queries: each member's query URL with its actives and standbys (learners
    included), told to every member; a member without a query URL is not listed."""
    ends = {TaskId(0, 0): 500, TaskId(0, 1): 700}
    assignor = make(ends)
    assignor.settings = AssignorSettings(acceptable_recovery_lag=0, num_standby_replicas=1)
    running = {TaskId(0, 0): -2, TaskId(0, 1): -2}
    subscriptions = {
        "m-a": member("a", owned=(0, 1), sums=running, query_url="http://a:8081"),
        "m-b": member("b", query_url="http://b:8081"),
        "m-c": member("c"),
    }
    result = run(assignor, subscriptions)
    told = [decode_assignment_info(r.user_data) for r in result.values()]  # type: ignore[attr-defined]
    assert all(t.query_hosts == told[0].query_hosts for t in told)
    hosts = {h.url: h for h in told[0].query_hosts}
    assert hosts["http://a:8081"] == QueryHost("http://a:8081", (TaskId(0, 0), TaskId(0, 1)), ())
    b = hosts["http://b:8081"]
    assert b.active == () and set(b.standby) <= {TaskId(0, 0), TaskId(0, 1)} and b.standby
    assert set(hosts) == {"http://a:8081", "http://b:8081"}
