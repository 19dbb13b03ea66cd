"""What watches a worker's membership of its group beside its tasks: the follow-up trigger
(asks for the rebalance that completes a move once the warm-ups caught up), the history of
rebalances it keeps (runtime/tasks/rebalances.py), its live status (status.py), and its drain
(draining.py: hands its tasks off warm when it is told to stop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from streamjoin.dsl.settings import AppSettings
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.member import MemberState
from streamjoin.runtime.process.draining import Drain
from streamjoin.runtime.process.loop_monitor import LoopMonitor
from streamjoin.runtime.process.metrics import RestoreTracker
from streamjoin.runtime.process.options import WorkerOptions
from streamjoin.runtime.process.status import StatusSettings, WorkerStatus
from streamjoin.runtime.tasks.followup import FollowupTrigger
from streamjoin.runtime.tasks.rebalances import RebalanceRecorder
from streamjoin.state.manager import StateManager

__all__ = ("watch_group",)


def watch_group(
    settings: AppSettings,
    options: WorkerOptions,
    recorder: RebalanceRecorder,
    consumer: CooperativeConsumer,
    *,
    state: StateManager,
    restores: RestoreTracker,
    last_commit_ms: Callable[[], int | None],
) -> tuple[FollowupTrigger, WorkerStatus, Drain]:
    """The follow-up trigger, the live status and the drain of a worker whose group listener
    is `recorder` (it learns of the member here)."""
    recorder.member = consumer.member
    followup = FollowupTrigger(
        recorder.roles,
        state,
        acceptable_recovery_lag=settings.acceptable_recovery_lag,
        stable=lambda: consumer.member.state is MemberState.STABLE,
        generation=lambda: consumer.generation,
        request_rejoin=consumer.request_rejoin,
        max_backoff_s=settings.probing_rebalance_interval_s,
        asked=recorder.asked,
    )
    recorder.manager.withheld = followup.withheld
    status = WorkerStatus(
        manager=recorder.manager,
        roles=recorder.roles,
        state=state,
        consumer=consumer,
        recorder=recorder,
        restores=restores,
        settings=StatusSettings(
            options.capacity,
            settings.acceptable_recovery_lag,
            options.followup_on_catch_up,
            options.member_index,
        ),
        last_commit_ms=last_commit_ms,
    )
    drain = Drain.of_worker(recorder, consumer, options.drain_timeout_s)
    return followup, status, drain


def run_beside(
    monitor: LoopMonitor,
    followup: FollowupTrigger,
    status: WorkerStatus,
    drain: Drain,
    stops: tuple[asyncio.Event, asyncio.Event],
    *,
    catch_up: bool,
) -> list[asyncio.Task[None]]:
    """What runs beside a worker's record loop: its loop monitor, live status, follow-up
    trigger, and the drain, which waits for the first of `stops` (a warm stop), and sets the
    second (stop) when it is done."""
    return [
        asyncio.create_task(monitor.run(), name="loop monitor"),
        asyncio.create_task(status.run(), name="status"),
        asyncio.create_task(followup.run(catch_up=catch_up), name="follow-up trigger"),
        asyncio.create_task(drain.when_asked(*stops), name="drain"),
    ]
