"""The task assignor as a consumer-group assignor (`streamjoin-tasks`): subscriptions with
SubscriptionInfo in, partitions plus AssignmentInfo out.

Each member says which process it is, how many tasks it can take, how far its local state
of every task is (offset sums), and whether it is draining (stopping: its tasks move off it
warm, and the leader tells it that it was taken as draining). The leader turns the group's
topics into tasks (one per partition number of each sub-topology), runs `assign_tasks` over
the processes (a client is a process id: all members of one host share it, its capacity is
theirs together), spreads each client's tasks over its members (members.py), gives every
member the input partitions of its active tasks, and tells it its standby and learner tasks.
The cooperative step (group/) then holds back partitions another member still owns, so a task
that moves keeps running on its old owner until that owner has revoked it.

The only I/O, reading the changelog end offsets, happens in `before_assign`; `assign` is pure.
If the end offsets cannot be read, only the processes running a task count as caught up on it —
the previous actives stay put, nothing starts warming up blind — and a follow-up is scheduled.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from streamjoin.assignment.model import (
    Assignment,
    GroupAssignment,
    PartitionAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    sorted_partitions,
)
from streamjoin.assignment.task_metadata import (
    LATEST_VERSION,
    NO_PROBE,
    AssignmentInfo,
    QueryHost,
    SubscriptionInfo,
    decode_assignment_info,
    decode_subscription_info,
    encode_assignment_info,
    encode_subscription_info,
)
from streamjoin.assignment.tasks.assignor import assign_tasks
from streamjoin.assignment.tasks.members import Member, spread_over_members
from streamjoin.assignment.tasks.model import (
    RUNNING_ACTIVE,
    AssignorSettings,
    ClientState,
    TaskAssignment,
    TaskId,
    TaskSpec,
    best_offset_sum,
)
from streamjoin.errors import ProtocolDecodeError

__all__ = ("EndOffsets", "Subtopology", "TaskPartitionAssignor")

logger = logging.getLogger(__name__)

EndOffsets = Callable[[Sequence[TaskId]], Awaitable[Mapping[TaskId, int]]]
"""Changelog end-offset sums of the given stateful tasks (raises when they cannot be read)."""


@dataclass(frozen=True, slots=True)
class Subtopology:
    """Co-partitioned input topics whose partition p makes task (index, p)."""

    topics: tuple[str, ...]
    stateful: bool = True


class TaskPartitionAssignor(PartitionAssignor):
    name = "streamjoin-tasks"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def __init__(
        self,
        subtopologies: Sequence[Subtopology],
        settings: AssignorSettings,
        *,
        member_info: Callable[[], SubscriptionInfo],
        end_offsets: EndOffsets,
        probing_interval_ms: int = 600_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.subtopologies = tuple(subtopologies)
        self.settings = settings
        self._member_info = member_info
        self._end_offsets = end_offsets
        self._probing_interval_ms = probing_interval_ms
        self._clock = clock
        self._ends: Mapping[TaskId, int] | None = None
        self.latest: AssignmentInfo | None = None
        """What this member was told in its last assignment."""
        self.generation = -1
        """The generation of `latest`."""
        self.last_plan: TaskAssignment | None = None
        """The leader's last task assignment (for logs and tests)."""
        self.last_members: Mapping[str, str] = {}
        """The leader's last assignment: member id -> process id (`streamjoin status`)."""

    # -- member side ---------------------------------------------------------------------------

    def subscription_user_data(self, topics: Sequence[str]) -> bytes:
        return encode_subscription_info(self._member_info())

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        try:
            self.latest = decode_assignment_info(assignment.user_data)
        except ProtocolDecodeError as exc:
            logger.warning("assignment without task roles (%s): running only its partitions", exc)
            self.latest = AssignmentInfo()
        self.generation = generation

    # -- leader side ---------------------------------------------------------------------------

    def tasks(self, partitions_per_topic: Mapping[str, int]) -> list[TaskId]:
        found = []
        for index, sub in enumerate(self.subtopologies):
            counts = [partitions_per_topic.get(t, 0) for t in sub.topics]
            found += [TaskId(index, p) for p in range(min(counts, default=0))]
        return found

    async def before_assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> None:
        stateful = [
            t
            for t in self.tasks(partitions_per_topic)
            if self.subtopologies[t.subtopology].stateful
        ]
        try:
            self._ends = await self._end_offsets(stateful)
        except Exception as exc:  # noqa: BLE001 - any failure means "unknown", never a crash
            logger.warning(
                "changelog end offsets unavailable (%s): previous actives stay, follow-up set", exc
            )
            self._ends = None

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
    ) -> GroupAssignment:
        tasks = self.tasks(partitions_per_topic)
        infos = {m: self._decode(m, s) for m, s in sorted(subscriptions.items())}
        self.last_members = {member: info.process_id for member, info in infos.items()}
        members_of: defaultdict[str, list[str]] = defaultdict(list)
        for member, info in infos.items():
            members_of[info.process_id].append(member)
        clients = [
            self._client(process, [(subscriptions[m], infos[m]) for m in members], tasks)
            for process, members in sorted(members_of.items())
        ]
        if self._ends is not None:
            clients = [self._with_observed_lags(c, infos, members_of) for c in clients]
        specs, unknown_ends = self._specs(tasks, clients)
        plan = assign_tasks(clients, specs, self.settings)
        self.last_plan = plan
        followup = plan.followup or unknown_ends
        probe = int(self._clock() * 1000) + self._probing_interval_ms if followup else NO_PROBE
        version = min((i.latest_supported for i in infos.values()), default=LATEST_VERSION)
        by_host = self._partitions_by_host(plan, members_of, infos)
        spreads = {
            process: spread_over_members(
                plan.clients[process],
                [self._member(m, subscriptions[m], infos[m], tasks) for m in sorted(members)],
            )
            for process, members in members_of.items()
        }
        query_hosts = tuple(
            QueryHost(url, roles.active, tuple(sorted(roles.standby + roles.learner)))
            for member, roles in sorted(
                (member, roles) for spread in spreads.values() for member, roles in spread.items()
            )
            if (url := infos[member].query_url)
        )
        assignment: GroupAssignment = {}
        for process, spread in spreads.items():
            warming = plan.warming_up(process)
            draining = process in plan.draining
            for member, roles in spread.items():
                told = AssignmentInfo(
                    roles.active,
                    roles.standby,
                    roles.learner,
                    by_host,
                    probe,
                    0,
                    version=min(version, LATEST_VERSION),
                    warmup=tuple(sorted(warming.intersection(roles.standby + roles.learner))),
                    query_hosts=query_hosts,
                    draining=draining,
                )
                partitions = [tp for task in roles.active for tp in self._partitions(task)]
                assignment[member] = Assignment(
                    sorted_partitions(partitions), encode_assignment_info(told)
                )
        return assignment

    def _decode(self, member: str, subscription: Subscription) -> SubscriptionInfo:
        try:
            return decode_subscription_info(subscription.user_data)
        except ProtocolDecodeError as exc:
            logger.warning("member %s: %s; treated as a new process with no state", member, exc)
            return SubscriptionInfo(process_id=f"member:{member}")

    def _partitions(self, task: TaskId) -> list[TopicPartition]:
        return [
            TopicPartition(t, task.partition) for t in self.subtopologies[task.subtopology].topics
        ]

    def _member(
        self, name: str, subscription: Subscription, info: SubscriptionInfo, tasks: list[TaskId]
    ) -> Member:
        owned = set(subscription.owned_partitions)
        active = {t for t in tasks if all(tp in owned for tp in self._partitions(t))}
        return Member(name, info.capacity, frozenset(active), frozenset(info.standby) - active)

    def _client(
        self,
        process: str,
        members: list[tuple[Subscription, SubscriptionInfo]],
        tasks: list[TaskId],
    ) -> ClientState:
        owned = {tp for subscription, _ in members for tp in subscription.owned_partitions}
        sums: dict[TaskId, int] = {}
        standby: set[TaskId] = set()
        for _, info in members:
            for task, offset_sum in info.offset_sums.items():
                sums[task] = best_offset_sum(sums.get(task), offset_sum)
            standby.update(info.standby)
        active = {t for t in tasks if all(tp in owned for tp in self._partitions(t))}
        active |= {t for t, s in sums.items() if s == RUNNING_ACTIVE}
        for task in active:
            sums[task] = RUNNING_ACTIVE
        return ClientState(
            process,
            capacity=sum(info.capacity for _, info in members),
            previous_active=frozenset(active),
            previous_standby=frozenset(standby - active),
            offset_sums=sums,
            # A host drains when all its processes do; one process of several stopping moves
            # its tasks to its siblings, which share its state directory.
            draining=all(info.draining for _, info in members),
        )

    def _with_observed_lags(
        self,
        client: ClientState,
        infos: Mapping[str, SubscriptionInfo],
        members_of: Mapping[str, list[str]],
    ) -> ClientState:
        """Offset sums as of now: the end read just now minus the lag the member saw when it
        joined, for the tasks it reported a lag of (its offset sum went stale meanwhile)."""
        assert self._ends is not None
        sums = dict(client.offset_sums)
        for member in members_of[client.process_id]:
            for task, lag in infos[member].lags.items():
                if sums.get(task) != RUNNING_ACTIVE and task in self._ends:
                    sums[task] = max(0, self._ends[task] - lag)
        return replace(client, offset_sums=sums)

    def _specs(
        self, tasks: list[TaskId], clients: list[ClientState]
    ) -> tuple[list[TaskSpec], bool]:
        """Task specs with end offsets. When those are unknown, the end is put just beyond the
        acceptable lag of the best reported state: only a process running the task counts as
        caught up (so actives stay put), and an orphaned task goes to whoever has most of it."""
        ends = self._ends
        specs = []
        for task in tasks:
            if not self.subtopologies[task.subtopology].stateful:
                specs.append(TaskSpec(task))
            elif ends is not None:
                specs.append(TaskSpec(task, ends.get(task, 0)))
            else:
                best = max([0, *(c.offset_sums.get(task, 0) for c in clients)])
                specs.append(TaskSpec(task, best + self.settings.acceptable_recovery_lag + 1))
        return specs, ends is None

    def _partitions_by_host(
        self,
        plan: TaskAssignment,
        members_of: Mapping[str, list[str]],
        infos: Mapping[str, SubscriptionInfo],
    ) -> dict[str, tuple[TopicPartition, ...]]:
        """Where each active task's partitions are served (for queries and operators)."""
        hosts: dict[str, tuple[TopicPartition, ...]] = {}
        for process, members in members_of.items():
            endpoint = next((infos[m].endpoint for m in members if infos[m].endpoint), None)
            if endpoint:
                hosts[endpoint] = tuple(
                    sorted(tp for t in plan.clients[process].active for tp in self._partitions(t))
                )
        return hosts
