"""What tests of a worker's tasks share (runtime/tasks: standbys, lost tasks): a one-join app's
topology, and the roles an assignment gave; conftest.py's `state` is their state manager."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin import App, JoinWindows
from streamjoin.runtime.tasks.roles import Roles
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId


@dataclass
class Told:
    """What the last assignment gave this worker (the roles' side the standbys read)."""

    told: Roles = field(default_factory=Roles)
    standby: set[TaskId] = field(default_factory=set)

    def roles(self) -> Roles:
        return self.told


def topology(unique: str) -> AppTopology:
    app = App(f"tasks-{unique}")

    window = JoinWindows(before=0, after=1_000)

    @app.join(app.topic("imp"), app.topic("clk"), window=window, into="out")
    def attribute(left: object, right: object) -> object:
        return left

    return AppTopology(app, {"attribute": 2})
