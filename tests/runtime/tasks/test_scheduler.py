"""How one round of the worker's loop shares its records among the running tasks."""

from __future__ import annotations

from typing import Any

from streamjoin import App, JoinWindows
from streamjoin.assignment.model import TopicPartition
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.running import RunningTask, running_task
from streamjoin.runtime.tasks.scheduler import MIN_TURN, Scheduler
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from tests.runtime.tasks.test_admission import Fetched, Recording, Sent


def _app() -> App:
    app = App("rounds")

    @app.join(app.topic("l"), app.topic("r"), window=JoinWindows(before=0, after=1_000), into="o")
    def joined(left: Any, right: Any) -> Any:
        return left

    return app


def _task(app: App, partition: int, records: int) -> RunningTask:
    [spec] = app.joins
    task_id = TaskId("joined", partition)
    join = JoinTask(app.app_id, spec, task_id, Recording(), Sent())  # type: ignore[arg-type]
    left, right = TopicPartition("l", partition), TopicPartition("r", partition)
    task = running_task(task_id, (left, right), [(spec, join)], 0)
    task.add(left, [Fetched(o, 10 + 2 * o, key=b"k%d" % o) for o in range(records)])
    task.add(right, [Fetched(o, 11 + 2 * o, key=b"k%d" % o) for o in range(records)])
    return task


def test_a_round_gives_every_one_of_many_tasks_a_turn_worth_several_records() -> None:
    """With 600 tasks and a budget of 500, each task used to get one record per turn, and a
    hundred none: the round's costs per task grew the CPU per record with the task count."""
    app = _app()
    tasks = {TaskId("joined", p): _task(app, p, MIN_TURN) for p in range(600)}
    scheduler = Scheduler(AppTopology(app, {"joined": 600}))
    processed = scheduler.process(dict(tasks), 10**12, lambda _tp: 0, budget=500)
    assert processed >= 600 * MIN_TURN
    assert all(task.buffered() <= MIN_TURN for task in tasks.values())


def test_a_few_tasks_keep_the_rounds_budget() -> None:
    app = _app()
    tasks = {TaskId("joined", p): _task(app, p, 1_000) for p in range(4)}
    scheduler = Scheduler(AppTopology(app, {"joined": 4}))
    assert scheduler.process(dict(tasks), 10**12, lambda _tp: 0, budget=500) == 500
