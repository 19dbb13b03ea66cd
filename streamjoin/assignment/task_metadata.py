"""streamjoin's task-assignment user data: SubscriptionInfo (member -> leader) and
AssignmentInfo (leader -> member), after Kafka Streams' (KIP-429, KIP-441), versioned; see
docs/rebalancing.md.

    SubscriptionInfo v1: version, latest supported version, process id, capacity, endpoint,
                         join counter, standby tasks, offset sums [(subtopology, partition, sum)],
                         observed lags [(subtopology, partition, lag)]
    AssignmentInfo   v1: version, latest supported version, active, standby and learner tasks,
                         partitions by host [(endpoint, [(topic, partition)])],
                         next probing rebalance (epoch ms, -1: none), error code
    SubscriptionInfo v2: as v1
    AssignmentInfo   v2: v1, then warm-up tasks (the learners and standbys that a move to this
                         member is waiting on; v1 members count only their learners)
    SubscriptionInfo v3: v2, then the member's query URL (nullable)
    AssignmentInfo   v3: v2, then query hosts [(query URL, active tasks, standby tasks)]: where
                         every member with a query URL runs each task (interactive queries)
    SubscriptionInfo v4: v3, then the URL of the member's live status (nullable; GET <url>/status,
                         read by `streamjoin status`)
    AssignmentInfo   v4: as v3
    SubscriptionInfo v5: v4, then draining (int16, 1: the member is stopping and hands its tasks
                         off warm before it leaves)
    AssignmentInfo   v5: v4, then draining (int16, 1: the leader took the member as draining: its
                         tasks move off it warm, and it may leave once it has none)

Fields are only ever appended in later versions: a decoder reads the fields of the versions it
knows and ignores the rest, so a group of mixed versions keeps working; the leader answers in the
lowest version its members support.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streamjoin.assignment.model import TopicPartition
from streamjoin.assignment.tasks.model import TaskId
from streamjoin.assignment.wire import Reader, Writer
from streamjoin.errors import ProtocolDecodeError

__all__ = (
    "LATEST_VERSION",
    "AssignmentInfo",
    "QueryHost",
    "SubscriptionInfo",
    "decode_assignment_info",
    "decode_subscription_info",
    "encode_assignment_info",
    "encode_subscription_info",
)

LATEST_VERSION = 5
NO_PROBE = -1


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    process_id: str
    capacity: int = 1
    endpoint: str | None = None
    counter: int = 0
    """Changes on every join, so a follower's rejoin always changes its metadata and the
    coordinator starts a rebalance (KAFKA-10455)."""
    offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    """Every task with local state: its changelog offset sum, -2 for a running active."""
    standby: tuple[TaskId, ...] = ()
    """Tasks the process ran as standbys (learners included) in the previous generation."""
    lags: Mapping[TaskId, int] = field(default_factory=dict)
    """For tasks it tails (standbys, learners, restoring actives): how far behind their
    changelogs' ends it was when it joined. Offset sums go stale while a JoinGroup is held
    (seconds), the lag seen at the same instant as the offsets does not."""
    version: int = LATEST_VERSION
    latest_supported: int = LATEST_VERSION
    query_url: str | None = None
    """Where the member answers interactive queries (v3; None: it does not)."""
    status_url: str | None = None
    """Where the member serves its live status, `<url>/status` (v4; None: it does not)."""
    draining: bool = False
    """The member is stopping: no task is placed on it, its tasks move warm (v5)."""


@dataclass(frozen=True, slots=True)
class QueryHost:
    """A member that answers queries, and the tasks it holds as active and as standby (learners
    included: both keep a copy of the task's state)."""

    url: str
    active: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()


@dataclass(frozen=True, slots=True)
class AssignmentInfo:
    active: tuple[TaskId, ...] = ()
    standby: tuple[TaskId, ...] = ()
    learner: tuple[TaskId, ...] = ()
    partitions_by_host: Mapping[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    next_probe_ms: int = NO_PROBE
    error_code: int = 0
    version: int = LATEST_VERSION
    latest_supported: int = LATEST_VERSION
    warmup: tuple[TaskId, ...] = ()
    """Tasks of this member (learners, and standbys a move warms up in) whose catching up
    completes a move. Read from a v1 leader: its learners."""
    query_hosts: tuple[QueryHost, ...] = ()
    """Every member's query URL with its tasks (v3; empty from older leaders)."""
    draining: bool = False
    """The leader took this member as draining (v5; False from older leaders, which do not:
    then the member leaves at once, as before)."""


def _write_task(writer: Writer, task: TaskId) -> None:
    writer.int32(task.subtopology).int32(task.partition)


def _read_task(reader: Reader) -> TaskId:
    return TaskId(reader.int32(), reader.int32())


def _write_tasks(writer: Writer, tasks: Iterable[TaskId]) -> None:
    writer.array(sorted(tasks), _write_task)


def _header(reader: Reader, what: str) -> tuple[int, int]:
    version, latest = reader.int16(), reader.int16()
    if version < 1:
        raise ProtocolDecodeError(f"{what}: unknown version {version}")
    return version, latest


def encode_subscription_info(info: SubscriptionInfo) -> bytes:
    writer = Writer().int16(info.version).int16(info.latest_supported)
    writer.string(info.process_id).int32(info.capacity).nullable_string(info.endpoint)
    writer.int32(info.counter)
    _write_tasks(writer, info.standby)

    def write_sum(w: Writer, item: tuple[TaskId, int]) -> None:
        _write_task(w, item[0])
        w.int64(item[1])

    writer.array(sorted(info.offset_sums.items()), write_sum)
    writer.array(sorted(info.lags.items()), write_sum)
    if info.version >= 3:
        writer.nullable_string(info.query_url)
    if info.version >= 4:
        writer.nullable_string(info.status_url)
    if info.version >= 5:
        writer.int16(1 if info.draining else 0)
    return writer.getvalue()


def decode_subscription_info(data: bytes) -> SubscriptionInfo:
    """Any version from 1 up; fields of versions above 1 are skipped."""
    what = "streamjoin SubscriptionInfo"
    reader = Reader(data, what)
    version, latest = _header(reader, what)
    process_id, capacity = reader.string(), reader.int32()
    endpoint, counter = reader.nullable_string(), reader.int32()
    standby = tuple(reader.array(_read_task))

    def read_sum(r: Reader) -> tuple[TaskId, int]:
        return _read_task(r), r.int64()

    sums = dict(reader.array(read_sum))
    lags = dict(reader.array(read_sum))
    query_url = reader.nullable_string() if version >= 3 else None
    status_url = reader.nullable_string() if version >= 4 else None
    draining = reader.int16() == 1 if version >= 5 else False
    if capacity < 1:
        raise ProtocolDecodeError(f"{what}: capacity {capacity} of {process_id!r} is below 1")
    return SubscriptionInfo(
        process_id,
        capacity,
        endpoint,
        counter,
        sums,
        standby,
        lags,
        version,
        latest,
        query_url,
        status_url,
        draining,
    )


def encode_assignment_info(info: AssignmentInfo) -> bytes:
    writer = Writer().int16(info.version).int16(info.latest_supported)
    for tasks in (info.active, info.standby, info.learner):
        _write_tasks(writer, tasks)

    def write_host(w: Writer, item: tuple[str, tuple[TopicPartition, ...]]) -> None:
        w.string(item[0])
        w.array(sorted(item[1]), lambda w2, tp: w2.string(tp.topic).int32(tp.partition))

    writer.array(sorted(info.partitions_by_host.items()), write_host)
    writer.int64(info.next_probe_ms).int32(info.error_code)
    if info.version >= 2:
        _write_tasks(writer, info.warmup)
    if info.version >= 3:

        def write_query_host(w: Writer, host: QueryHost) -> None:
            w.string(host.url)
            _write_tasks(w, host.active)
            _write_tasks(w, host.standby)

        writer.array(sorted(info.query_hosts, key=lambda h: h.url), write_query_host)
    if info.version >= 5:
        writer.int16(1 if info.draining else 0)
    return writer.getvalue()


def decode_assignment_info(data: bytes) -> AssignmentInfo:
    """Any version from 1 up; fields of versions above 1 are skipped."""
    what = "streamjoin AssignmentInfo"
    reader = Reader(data, what)
    version, latest = _header(reader, what)
    active, standby, learner = (tuple(reader.array(_read_task)) for _ in range(3))

    def read_host(r: Reader) -> tuple[str, tuple[TopicPartition, ...]]:
        host = r.string()
        return host, tuple(r.array(lambda r2: TopicPartition(r2.string(), r2.int32())))

    hosts = dict(reader.array(read_host))
    next_probe, error = reader.int64(), reader.int32()
    warmup = tuple(reader.array(_read_task)) if version >= 2 else learner

    def read_query_host(r: Reader) -> QueryHost:
        return QueryHost(r.string(), tuple(r.array(_read_task)), tuple(r.array(_read_task)))

    query_hosts = tuple(reader.array(read_query_host)) if version >= 3 else ()
    draining = reader.int16() == 1 if version >= 5 else False
    return AssignmentInfo(
        active,
        standby,
        learner,
        hosts,
        next_probe,
        error,
        version,
        latest,
        warmup,
        query_hosts,
        draining,
    )
