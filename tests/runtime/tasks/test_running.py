"""A task of several joins reading one topic orders their input once and hands each record to
all of them before the next: they are at the same offset of the shared partition at every
moment, so a commit never leaves one ahead (what exactly-once needs after a hand-off)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.assignment.model import TopicPartition
from streamjoin.dsl.spec import JoinSpec
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.running import RunningTask, running_task
from streamjoin.runtime.topology.app_topology import TaskId
from tests.runtime.tasks.test_admission import YEAR_3270, Fetched, Recording, Sent

IMPRESSIONS, CLICKS, VIEWS = (TopicPartition(t, 0) for t in ("impressions", "clicks", "views"))
TASK = TaskId("attribute.viewed", 0)


def _app() -> App:
    app = App("shared")
    impressions = app.topic("impressions")
    window = JoinWindows(before=0, after=1_000, grace=100)

    @app.join(impressions, app.topic("clicks"), window=window, into="attributed")
    def attribute(impression: Any, click: Any) -> Any:
        return impression

    @app.join(impressions, app.topic("views"), window=window, into="seen")
    def viewed(impression: Any, view: Any) -> Any:
        return impression

    return app


def _shared_task() -> tuple[RunningTask, dict[str, Recording], Sent]:
    app, sent = _app(), Sent()
    seen: dict[str, Recording] = {}
    members: list[tuple[JoinSpec, JoinTask]] = []
    for spec in app.joins:
        seen[spec.name] = Recording()
        task = JoinTask(app.app_id, spec, TASK, seen[spec.name], sent)  # type: ignore[arg-type]
        members.append((spec, task))
    return running_task(TASK, (IMPRESSIONS, CLICKS, VIEWS), members, 0), seen, sent


def _caught_up(_tp: TopicPartition) -> int:
    return 0


def test_each_record_of_the_shared_topic_reaches_every_join_before_the_next() -> None:
    task, seen, _ = _shared_task()
    task.add(IMPRESSIONS, [Fetched(0, 100), Fetched(1, 300)])
    task.add(CLICKS, [Fetched(0, 200)])
    task.add(VIEWS, [Fetched(0, 250)])
    assert task.process(0, _caught_up, budget=1) == 1
    assert seen["attribute"].seen == seen["viewed"].seen == [0]
    assert task.positions() == {IMPRESSIONS: 1}
    task.process(0, _caught_up, budget=10)
    # In timestamp order across the three partitions: i0, c0, v0, i1.
    assert seen["attribute"].seen == [0, 0, 1] and seen["viewed"].seen == [0, 0, 1]
    assert task.positions() == {IMPRESSIONS: 2, CLICKS: 1, VIEWS: 1}


def test_a_refused_record_is_a_dead_letter_of_each_join_and_counts_as_processed() -> None:
    task, seen, sent = _shared_task()
    task.add(IMPRESSIONS, [Fetched(0, YEAR_3270)])
    task.process(0, _caught_up, budget=10)
    assert seen["attribute"].seen == seen["viewed"].seen == []
    assert len(sent) == 2
    assert task.positions() == {IMPRESSIONS: 1}


def test_a_task_waits_for_a_partition_with_records_on_the_broker() -> None:
    task, _, _ = _shared_task()
    task.add(IMPRESSIONS, [Fetched(0, 100)])
    assert task.process(0, lambda tp: 5 if tp == VIEWS else 0, budget=10) == 0
    assert task.positions() == {}


BASE = {IMPRESSIONS: 0, CLICKS: 10_000, VIEWS: 20_000}
"""Offsets of each partition start apart, so a join's record of offsets tells them apart."""


@given(
    st.lists(
        st.tuples(st.sampled_from(list(BASE)), st.integers(1, 4), st.integers(0, 3)),
        max_size=30,
    )
)
def test_the_joins_never_stand_at_different_offsets_of_the_shared_partition(
    steps: list[tuple[TopicPartition, int, int]],
) -> None:
    task, seen, _ = _shared_task()
    added = dict.fromkeys(BASE, 0)
    for tp, count, budget in steps:
        first = BASE[tp] + added[tp]
        task.add(tp, [Fetched(o, 1_000 + o % 10_000 * 7) for o in range(first, first + count)])
        added[tp] += count
        task.process(0, _caught_up, budget)
        processed = task.positions().get(IMPRESSIONS, 0)
        for join in seen.values():
            assert [o for o in join.seen if o < BASE[CLICKS]] == list(range(processed))


def test_a_task_of_one_join_lets_it_order_its_own_sides() -> None:
    app, sent, processor = _app(), Sent(), Recording()
    spec = app.joins[0]
    join = JoinTask(app.app_id, spec, TaskId("attribute", 0), processor, sent)  # type: ignore[arg-type]
    task = running_task(TaskId("attribute", 0), (IMPRESSIONS, CLICKS), [(spec, join)], 0)
    task.add(CLICKS, [Fetched(4, 50)])
    task.add(IMPRESSIONS, [Fetched(9, 60)])
    task.process(0, _caught_up, 10)
    assert processor.seen == [4, 9]
    assert task.positions() == {IMPRESSIONS: 10, CLICKS: 5}
    assert task.members == (join,)
