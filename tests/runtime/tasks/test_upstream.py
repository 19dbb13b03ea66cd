"""A join behind a key_by does not run ahead of what is on its way to it (issue 35 item 1):
the worker's key_by tasks write in one time order, and a join holds back behind what they
will write next, behind their writes not yet fetched back, and behind other workers' key_by
tasks; a repartition partition several workers fill is read in timestamp order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streamjoin import App, JoinWindows
from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.runtime.joins.records import Side
from streamjoin.runtime.tasks.arrivals import QUIET_WAIT_MS, Arrivals
from streamjoin.runtime.tasks.in_flight import InFlightWrites
from streamjoin.runtime.tasks.join_task import JoinTask
from streamjoin.runtime.tasks.ordering import NO_LIMIT, WAITING, TimeSortedBuffer
from streamjoin.runtime.tasks.repartition import RepartitionTask
from streamjoin.runtime.tasks.running import RunningTask, running_task
from streamjoin.runtime.tasks.scheduler import Scheduler
from streamjoin.runtime.tasks.upstream import RemoteView, UpstreamGate, hops
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from tests.runtime.tasks.test_admission import Fetched, Recording, Sent

PARTITIONS = 2
REPARTITION = "shop-paid-right-repartition"
ORDERS = [TopicPartition("orders", p) for p in range(PARTITIONS)]
PAYMENTS = [TopicPartition("payments", p) for p in range(PARTITIONS)]
RIGHT = [TopicPartition(REPARTITION, p) for p in range(PARTITIONS)]


def _app() -> App:
    app = App("shop")
    payments = app.topic("payments").key_by("order_id")

    @app.join(app.topic("orders"), payments, window=JoinWindows(before=0, after=1_000), into="o")
    def paid(order: Any, payment: Any) -> Any:
        return order

    return app


def _topology() -> AppTopology:
    return AppTopology(_app(), {"paid": PARTITIONS, "paid-right-repartition": PARTITIONS})


def _payment(offset: int, timestamp: int, order: str = "o1") -> Fetched:
    value = json.dumps({"order_id": order}).encode()
    return Fetched(offset, timestamp, key=f"p{offset}".encode(), value=value)


def _key_by_task(partition: int, sent: Sent, writes: InFlightWrites | None = None) -> RunningTask:
    app = _app()
    [repartition] = app.repartitions
    task_id = TaskId("paid-right-repartition", partition)
    member = RepartitionTask(app.app_id, repartition, task_id, sent, writes=writes)  # type: ignore[arg-type]
    return running_task(task_id, (PAYMENTS[partition],), [(repartition, member)], 0)


def _join_task(partition: int, processor: Recording) -> RunningTask:
    app = _app()
    [spec] = app.joins
    task_id = TaskId("paid", partition)
    join = JoinTask(app.app_id, spec, task_id, processor, Sent())  # type: ignore[arg-type]
    return running_task(task_id, (ORDERS[partition], RIGHT[partition]), [(spec, join)], 0)


def _caught_up(_tp: TopicPartition) -> int:
    return 0


def test_the_workers_key_by_tasks_write_in_one_time_order() -> None:
    """Two key_by tasks with interleaved timestamps, processed in one round: the records reach
    the repartition topic in time order (a task at a time, in slices, would write each task's
    slice and run the topic backwards in time)."""
    sent = Sent()
    tasks = {TaskId("paid-right-repartition", p): _key_by_task(p, sent) for p in (0, 1)}
    tasks[TaskId("paid-right-repartition", 0)].add(
        PAYMENTS[0], [_payment(o, ts) for o, ts in enumerate((10, 40, 50, 90))]
    )
    tasks[TaskId("paid-right-repartition", 1)].add(
        PAYMENTS[1], [_payment(o, ts) for o, ts in enumerate((20, 30, 60, 70, 80))]
    )
    scheduler = Scheduler(_topology())
    assert scheduler.process(dict(tasks), 0, _caught_up, budget=500) == 9
    assert [r.timestamp for r in sent] == [10, 20, 30, 40, 50, 60, 70, 80, 90]


def test_the_key_by_tasks_wait_for_one_whose_records_are_on_the_broker() -> None:
    sent = Sent()
    tasks = {TaskId("paid-right-repartition", p): _key_by_task(p, sent) for p in (0, 1)}
    tasks[TaskId("paid-right-repartition", 0)].add(PAYMENTS[0], [_payment(0, 10)])
    behind = {PAYMENTS[0]: 0, PAYMENTS[1]: 5}
    assert Scheduler(_topology()).process(dict(tasks), 0, behind.get, budget=500) == 0
    assert not sent


def test_the_partition_a_key_by_chooses_is_the_default_partitioners() -> None:
    writes = InFlightWrites({REPARTITION: PARTITIONS})
    sent = Sent()
    task = _key_by_task(0, sent, writes)
    task.add(PAYMENTS[0], [_payment(o, 10 + o, order=f"o{o}") for o in range(20)])
    task.process(0, _caught_up, 100)
    assert [r.partition for r in sent] == [partition_for_key(r.key, PARTITIONS) for r in sent]  # type: ignore[arg-type]


def test_a_write_is_on_its_way_until_acknowledged_and_fetched_back() -> None:
    writes = InFlightWrites({REPARTITION: PARTITIONS})
    tp = RIGHT[partition_for_key(b"o1", PARTITIONS)]
    writes.reading([tp])
    assert writes.write(REPARTITION, b"o1", 100) == tp.partition
    writes.write(REPARTITION, b"o1", 200)
    assert writes.oldest(tp) == 100  # not acknowledged yet
    writes.acknowledged(REPARTITION, tp.partition, 7, 2)
    assert writes.oldest(tp) == 100  # stored at offsets 7 and 8, not fetched
    writes.fetched(tp, [Fetched(7, 100)])
    assert writes.oldest(tp) == 200
    writes.fetched(tp, [Fetched(8, 200)])
    assert writes.oldest(tp) is None
    assert writes.write("a-topic-read-where-it-is-written", b"o1", 250) is None
    writes.write(REPARTITION, b"o1", 300)
    writes.forget([tp])  # its join left this worker: what reaches it is not waited for
    writes.acknowledged(REPARTITION, tp.partition, 9, 1)
    assert writes.oldest(tp) is None
    for n in range(1_000):  # nor kept: a partition read elsewhere holds only what is unsent
        writes.write(REPARTITION, b"o1", 400 + n)
        writes.acknowledged(REPARTITION, tp.partition, 10 + n, 1)
    assert not writes._pending[tp]


def test_a_join_holds_back_behind_what_its_key_by_will_write_and_what_is_on_its_way() -> None:
    topology = _topology()
    writes = InFlightWrites({REPARTITION: PARTITIONS})
    gate = UpstreamGate(topology, writes)
    sent, processor = Sent(), Recording()
    key_bys = {
        TaskId("paid-right-repartition", 0): _key_by_task(0, Sent()),
        TaskId("paid-right-repartition", 1): _key_by_task(1, sent, writes),
    }
    join, paid = _join_task(0, processor), TaskId("paid", 0)
    settled = -QUIET_WAIT_MS  # fetched long enough ago
    for task_id, tp, records in (
        (paid, ORDERS[0], [Fetched(o, ts) for o, ts in enumerate((100, 200, 300))]),
        (TaskId("paid-right-repartition", 1), PAYMENTS[1], [_payment(0, 150)]),
        (TaskId("paid-right-repartition", 0), PAYMENTS[0], [_payment(0, 50, order="o2")]),
    ):
        writes.fetched(tp, records, now_ms=settled)
        (join if task_id == paid else key_bys[task_id]).add(tp, records)
    key_bys[TaskId("paid-right-repartition", 0)].process(settled, _caught_up, 10)
    active: dict[TaskId, RunningTask | None] = {**key_bys, paid: join}
    assert gate.limits(active, 0, _caught_up)[paid] == 150  # key_by 1 writes that next
    key_bys[TaskId("paid-right-repartition", 1)].process(0, _caught_up, 10)
    [written] = sent
    assert written.partition is not None
    if written.partition == 0:  # on its way to this join: not past it until fetched back
        assert gate.limits(active, 0, _caught_up)[paid] == 150
    else:  # nothing on its way: as far as it fetched long enough ago (caught-up key_bys)
        assert gate.limits(active, 0, _caught_up)[paid] == 300
    active[TaskId("paid-right-repartition", 0)] = None  # restoring: it may write anything
    assert gate.limits(active, 0, _caught_up)[paid] == WAITING
    assert paid not in gate.limits(active, 0, _caught_up, full={RIGHT[0]})  # cannot fetch


def test_a_caught_up_key_by_input_holds_back_what_was_fetched_a_moment_ago() -> None:
    """One producer in time order, but its batch of payments[0] reaches the broker after those
    of orders: payments[0] is caught up with nothing as new as the orders just fetched, so they
    wait, for QUIET_WAIT_MS at most."""
    writes = InFlightWrites({REPARTITION: PARTITIONS})
    gate = UpstreamGate(_topology(), writes)
    key_bys = {TaskId("paid-right-repartition", p): _key_by_task(p, Sent()) for p in (0, 1)}
    for p, ts in ((0, 120), (1, 500)):  # both caught up; payments[0] is behind
        key_bys[TaskId("paid-right-repartition", p)].add(PAYMENTS[p], [_payment(0, ts)])
        writes.fetched(PAYMENTS[p], [_payment(0, ts)], now_ms=0)
        key_bys[TaskId("paid-right-repartition", p)].process(0, _caught_up, 10)
    join, paid = _join_task(0, Recording()), TaskId("paid", 0)
    orders = [Fetched(o, ts) for o, ts in enumerate((100, 200, 300))]
    join.add(ORDERS[0], orders)
    writes.fetched(ORDERS[0], orders, now_ms=1_000)
    active: dict[TaskId, RunningTask | None] = {**key_bys, paid: join}
    assert gate.limits(active, 1_000, _caught_up)[paid] == 120
    assert gate.limits(active, 1_000 + QUIET_WAIT_MS, _caught_up)[paid] == 300  # all of them
    payment = _payment(1, 400)  # payments[0] moved on: nothing older can come any more
    key_bys[TaskId("paid-right-repartition", 0)].add(PAYMENTS[0], [payment])
    writes.fetched(PAYMENTS[0], [payment], now_ms=1_000)
    assert gate.limits(active, 1_000, _caught_up)[paid] == 400


def test_a_look_at_other_workers_covers_what_was_fetched_before_it() -> None:
    view = RemoteView(oldest=500, covered={ORDERS[0]: 10, RIGHT[0]: 4})
    assert view.limit({ORDERS[0]: Fetched(9, 300), RIGHT[0]: Fetched(3, 350)}) == 500
    assert view.limit({ORDERS[0]: Fetched(10, 300), RIGHT[0]: Fetched(3, 350)}) == 299
    assert view.limit({ORDERS[1]: Fetched(0, 50)}) == 49  # never fetched when it looked


class _NotLookedYet:
    def view(self, hop: Any, partition: int, local: frozenset[int]) -> RemoteView | None:
        assert local == {0}
        return None


def test_a_key_by_task_on_another_worker_is_waited_for_until_looked_at() -> None:
    assert hops(_topology())[0].writer == "paid-right-repartition"
    gate = UpstreamGate(_topology(), InFlightWrites({REPARTITION: PARTITIONS}))
    join = _join_task(0, Recording())
    active: dict[TaskId, RunningTask | None] = {
        TaskId("paid", 0): join,
        **{TaskId("paid-right-repartition", p): _key_by_task(p, Sent()) for p in (0, 1)},
    }
    assert gate.limits(active, 0, _caught_up) == {TaskId("paid", 0): NO_LIMIT}
    del active[TaskId("paid-right-repartition", 1)]  # another worker runs it
    gate.remote = _NotLookedYet()
    assert gate.limits(active, 0, _caught_up) == {TaskId("paid", 0): WAITING}


def test_what_was_fetched_long_enough_ago_counts_whatever_its_order() -> None:
    """A repartition partition several workers write interleaves their records: the newest
    timestamp fetched is the largest of a batch, not its last one's."""
    arrivals = Arrivals()
    arrivals.fetched(RIGHT[0], [Fetched(0, 100), Fetched(1, 900), Fetched(2, 300)], now_ms=0)
    assert arrivals.newest(RIGHT[0]) == 900
    assert arrivals.settled(RIGHT[0], now_ms=QUIET_WAIT_MS - 1) is None
    assert arrivals.settled(RIGHT[0], now_ms=QUIET_WAIT_MS) == 900


@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), max_size=40))
def test_a_sorted_buffer_hands_out_in_time_order_and_knows_what_is_processed(
    steps: list[tuple[int, bool]],
) -> None:
    """Records arrive in offset order with any timestamps; takes come in between. Each take is
    the oldest held, and the lowest offset held is the lowest not yet taken."""
    buffer: TimeSortedBuffer[Fetched] = TimeSortedBuffer()
    held: list[Fetched] = []
    for offset, (timestamp, take) in enumerate(steps):
        record = Fetched(offset, timestamp)
        buffer.extend([record])
        held.append(record)
        if take:
            got = buffer.popleft()
            assert (got.timestamp, got.offset) == min((r.timestamp, r.offset) for r in held)
            held.remove(got)
        lowest = min((r.offset for r in held), default=None)
        assert buffer.lowest_offset() == lowest
        assert len(buffer) == len(held)


def test_a_join_reading_a_sorted_side_commits_below_what_it_has_not_processed() -> None:
    app = _app()
    [spec] = app.joins
    processor = Recording()
    join = JoinTask(
        app.app_id, spec, TaskId("paid", 0), processor, Sent(), time_sorted=frozenset({Side.RIGHT})
    )  # type: ignore[arg-type]
    join.add(Side.RIGHT, [Fetched(0, 300), Fetched(1, 100), Fetched(2, 200)])
    join.process(0, lambda side: 0, 2)
    assert processor.seen == [1, 2]  # in time order
    assert join.positions() == {Side.RIGHT: 0}  # offset 0 is still to process
    join.process(0, lambda side: 0, 1)
    assert join.positions() == {Side.RIGHT: 3}
