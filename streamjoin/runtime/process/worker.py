"""The worker: one asyncio process running its share of an app's join tasks.

    fetch (owned partitions) -> tasks (timestamp order, join, joiner) -> producer
    every commit interval: flush producer (outputs, dead letters, changelogs)
                           -> write checkpoints -> commit input offsets with the generation

A crash anywhere in that sequence can repeat output, never lose it (at-least-once). Under
exactly-once each commit interval is one transaction of the worker's transactional producer
(exactly_once.py, output/transaction_state.py): tasks pause while it commits, and any failure loses
every task and starts the worker's producer and group membership over from the committed
offsets. Tasks map to workers through the consumer group with streamjoin's task assignor under
the COOPERATIVE protocol: a worker joining or leaving pauses only the tasks that move, and a
task moves only once its new owner has restored its state as a learner (then the follow-up
rebalance hands it over). Once the worker fails, no stop step waits for the broker for more
than seconds (stopping.py); endpoints.py serves its metrics and queries, clients.py makes its
producer and group member, options.py applies the command line's settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from functools import partial

from aiokafka import AIOKafkaProducer

from streamjoin.dsl.app import App
from streamjoin.dsl.topology import Topology
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.metrics import MetricsRegistry
from streamjoin.runtime.output.producer_sink import ProducerSink
from streamjoin.runtime.output.purge import RepartitionPurger
from streamjoin.runtime.output.transaction_state import TransactionState
from streamjoin.runtime.process import gc_tuning
from streamjoin.runtime.process.at_least_once import commit_tasks
from streamjoin.runtime.process.broker_watch import BrokerWatch
from streamjoin.runtime.process.clients import worker_consumer, worker_producer
from streamjoin.runtime.process.endpoints import (
    WorkerContext,
    WorkerService,
    register_metrics,
    serve_metrics,
)
from streamjoin.runtime.process.exactly_once import commit_transaction, run_restarting
from streamjoin.runtime.process.identity import transactional_id
from streamjoin.runtime.process.loop_monitor import LoopMonitor
from streamjoin.runtime.process.memory import memory_budget
from streamjoin.runtime.process.metrics import log_summary
from streamjoin.runtime.process.options import WorkerOptions, apply_options
from streamjoin.runtime.process.pacing import CommitPacer
from streamjoin.runtime.process.startup import prepare
from streamjoin.runtime.process.state import task_state, worker_roles
from streamjoin.runtime.process.status import WorkerStatus, input_lags
from streamjoin.runtime.process.stopping import closed, until_failed
from streamjoin.runtime.process.watch import run_beside, watch_group
from streamjoin.runtime.tasks.manager import TaskManager, TasksLost
from streamjoin.runtime.tasks.rebalances import RebalanceRecorder
from streamjoin.runtime.topology.app_topology import AppTopology, TaskId
from streamjoin.runtime.topology.topic_check import check_running_topics
from streamjoin.state.dir_lock import holding_state_dir
from streamjoin.state.layout import StateDirectory

__all__ = ("Worker", "WorkerOptions")

logger = logging.getLogger(__name__)


class Worker:
    def __init__(
        self,
        app: App,
        options: WorkerOptions | None = None,
        services: Sequence[WorkerService] = (),
    ) -> None:
        """`services`: served beside the tasks (interactive queries: query/endpoint.py)."""
        options = options or WorkerOptions()
        settings = apply_options(app.settings, options)
        self.app = app
        self.options = options
        self.kafka = KafkaConnection(
            options.bootstrap or settings.broker, options.security or settings.security
        )
        self.state_dir = options.state_dir or settings.state_dir
        self.commit_interval_s = options.commit_interval_s or settings.commit_interval_s
        self.memory = memory_budget(settings, options.memory_budget_bytes)
        self.exactly_once = settings.processing_guarantee == "exactly_once"
        self.transaction = asyncio.Lock()
        """Exactly-once: held while tasks process and while a transaction commits."""
        self._txn: TransactionState | None = None
        self._commit_lock = asyncio.Lock()
        self.commits_refused = False
        """Set when the worker fails on what the broker watch found: no more offsets go out."""
        self._stopping = asyncio.Event()
        self._draining = asyncio.Event()
        self.manager: TaskManager | None = None
        self.sink: ProducerSink | None = None
        self.started = asyncio.Event()
        """Set once the worker has started joining its group (for tests and embedding)."""
        self.metrics = MetricsRegistry()
        self.loop_monitor = LoopMonitor()
        self.services = tuple(services)
        self.watch: BrokerWatch | None = None
        self.status: WorkerStatus | None = None  # its live state (GET /status) once it runs
        self.last_commit_ms: int | None = None

    def stop(self, *, warm: bool = False) -> None:
        """Finish the batch, commit, leave the group, close; `warm`: hand the tasks off warm first
        (draining.py), cut short by a later stop(). From the event loop only (signal handlers)."""
        drain = warm and self.options.drain_timeout_s > 0 and not self._draining.is_set()
        (self._draining if drain else self._stopping).set()

    async def run(self) -> None:
        # A worker of its own refuses a state directory another worker holds; the processes
        # of a host share one under their supervisor, which holds it for them.
        with (
            holding_state_dir(self.state_dir, self.app.app_id)
            if self.options.member_index is None
            else contextlib.nullcontext()
        ):
            prepared = await prepare(
                self.app,
                self.kafka,
                state_dir=self.state_dir,
                memory=self.memory,
                process=self.options.member_index,
            )
            self.global_tables = prepared.global_tables
            failed = True
            try:
                await self._run_restarting(prepared.topology, prepared.compiled)
                failed = False
            finally:
                # After a failure (no broker) its consumer gets seconds to stop, as the others.
                await closed(self.global_tables.close(), quickly=failed)

    async def _run_restarting(self, topology: AppTopology, compiled: Topology) -> None:
        """Run; exactly-once: start over (new producer, new member) when a transaction fails."""

        async def attempt() -> None:
            producer = await self._start_producer()
            self.watch = watch = BrokerWatch(
                producer.client,
                self.kafka.bootstrap,
                give_up_after_s=self.app.settings.broker_unavailable_timeout_s,
                check_topics=lambda counts: check_running_topics(self.app, counts, compiled),
            )
            await self._run_then_close(producer, topology, watch)

        await run_restarting(
            attempt,
            exactly_once=self.exactly_once,
            stopping=self._stopping.is_set,
            committed=lambda: self._txn is not None and self._txn.commits > 0,
        )

    async def _run_then_close(
        self, producer: AIOKafkaProducer, topology: AppTopology, watch: BrokerWatch
    ) -> None:
        """Run with this producer, then close it (after a failure, within seconds: its
        transaction is dropped, its pending sends are not waited for)."""
        failed = True
        # Held back until the producer is closed too: its pending sends complain on every
        # metadata update about topics that are gone.
        with watch.quiet.installed():
            try:
                with gc_tuning.collector_tuned_for_throughput():
                    await self._run(producer, topology, watch)
                failed = False
            finally:
                await closed(producer.stop(), quickly=failed or watch.lost_since is not None)

    async def _start_producer(self) -> AIOKafkaProducer:
        """Start the producer; exactly-once: as this process's transactional producer, which
        fences (and aborts the transaction of) its previous incarnation."""
        if not self.exactly_once:
            producer = worker_producer(self.kafka, self.app.settings, self.commit_interval_s, None)
            await producer.start()
            return producer
        tid = transactional_id(
            self.app.app_id,
            StateDirectory(self.state_dir, self.app.app_id).app_dir,
            self.options.group_instance_id,
            self.options.member_index,
        )
        producer = worker_producer(self.kafka, self.app.settings, self.commit_interval_s, tid)
        self._txn = TransactionState(producer, tid)
        await self._txn.start(self.kafka.bootstrap)
        return producer

    @property
    def isolation_level(self) -> str:
        """Exactly-once reads committed records only: inputs, repartition topics, changelogs."""
        return "read_committed" if self.exactly_once else "read_uncommitted"

    async def _run(
        self, producer: AIOKafkaProducer, topology: AppTopology, watch: BrokerWatch
    ) -> None:
        state, restores, bars = task_state(
            state_dir=self.state_dir,
            app_id=self.app.app_id,
            kafka=self.kafka,
            producer=producer,
            memory=self.memory,
            isolation_level=self.isolation_level,
        )
        await state.start()
        sink = ProducerSink(producer)
        roles = worker_roles(topology, state, settings=self.app.settings, options=self.options)
        manager = TaskManager(
            topology,
            roles=roles,
            state=state,
            sink=sink,
            # Exactly-once: the task manager holds the transaction lock while it commits.
            commit=self._commit_transaction if self.exactly_once else partial(commit_tasks, self),
            transaction=self.transaction if self.exactly_once else None,
            kafka=self.kafka,
        )
        consumer = worker_consumer(
            topology.input_topics(),
            self.kafka,
            self.app,
            self.options,
            assignor=roles.assignor,
            listener=(recorder := RebalanceRecorder(manager, roles)),
            isolation_level=self.isolation_level,
            fetch_buffer_bytes=self.memory.fetch_bytes,
        )
        manager.fetch = consumer
        manager.global_tables = self.global_tables
        self.purger = RepartitionPurger(self.kafka, [r.topic.name for r in topology.repartitions])
        self.manager, self.sink, self.state, self.consumer = manager, sink, state, consumer
        self.followup, self.status, self.drain = watch_group(
            self.app.settings,
            self.options,
            recorder,
            consumer,
            state=state,
            restores=restores,
            last_commit_ms=lambda: self.last_commit_ms,
        )
        self.metrics.clear()  # afresh when exactly-once starts over; servers keep it
        register_metrics(
            self.metrics,
            manager,
            sink,
            restores,
            state,
            lag=lambda: input_lags(consumer),
            loop_monitor=self.loop_monitor,
            rebalances=recorder,
        )
        options = self.options
        server = await serve_metrics(self.metrics, options, self.status.document, roles)
        context = WorkerContext(topology, state, roles, self.metrics, self.global_tables)
        for service in self.services:
            await service.start(context)
        await consumer.start()
        self.started.set()
        watchers = run_beside(
            self.loop_monitor,
            self.followup,
            self.status,
            self.drain,
            (self._draining, self._stopping),
            catch_up=self.options.followup_on_catch_up,
        )
        failed = False
        try:
            await until_failed(self._loop(), watch.run())
            logger.info("stopping: final commit")
            if not await self._commit():
                logger.warning(
                    "stopping: no final commit while the group rebalances; the open "
                    "transaction is aborted and its tasks' next owners process its input again"
                )
        except BaseException:
            failed = True  # then closing waits a few seconds at most, never for good
            # Nothing of the open transaction may be committed now; nor may offsets go to a
            # broker whose topics are gone (they would point into topics made anew).
            self.commits_refused = watch.verdict is not None
            if self.exactly_once or self.commits_refused:
                await closed(manager.lose_all(), quickly=True)
            raise
        finally:
            for service in self.services:
                await service.stop()  # before the stores it reads close
            for background in watchers:
                background.cancel()
            quickly = failed or watch.lost_since is not None
            await self.purger.close(wait=not quickly)
            logger.info("stopping: leaving the group")
            await closed(consumer.stop(), quickly=quickly)
            await manager.close()
            logger.info("stopping: closing the state stores")
            # After a failure the last commit's checkpoints stand: nothing waits for the broker.
            await closed(state.close(clean=not quickly), quickly=quickly)
            if bars is not None:
                bars.stop()
            if server is not None:
                await server.stop()
        log_summary(manager, sink)
        logger.info("worker stopped")

    async def _loop(self) -> None:
        """Fetch, process, produce; commit (and flush: pacing.py) in the background, so a commit
        that waits (behind a JoinGroup on the coordinator's connection, say) pauses no task."""
        assert self.manager is not None and self.sink is not None
        manager = self.manager
        pacer = CommitPacer(self.commit_interval_s, time.monotonic())
        committing: asyncio.Task[None] | None = None
        try:
            while not self._stopping.is_set():
                if manager.failure is not None:
                    raise manager.failure
                busy = manager.buffered() > 0
                processed = await self._round(busy)
                # Yield to the event loop every round even when nothing above had to wait (fetched
                # records at hand, room in the producer): heartbeats and fetches run in between.
                await asyncio.sleep(0.005 if busy and not processed else 0)
                now = time.monotonic()
                gc_tuning.collect_young_when_due(now)
                gc_tuning.reclaim_frozen_garbage(now)
                due = pacer.commit_due(now) or self.state.needs_flush
                if due and self.exactly_once:  # tasks wait for the transaction to commit
                    if await self._commit():  # else the member rejoins: the next round tries
                        pacer.committed(time.monotonic())
                elif committing is None or committing.done():
                    if committing is not None:
                        committing.result()  # a failed flush stops the worker: nothing is lost
                    if due:
                        committing = asyncio.create_task(self._commit_tasks(), name="commit")
                        pacer.committed(now)
                    elif not self.exactly_once and pacer.flush_due(now, self.consumer):
                        committing = asyncio.create_task(self._flush(), name="state flush")
            if committing is not None:
                await committing
        finally:
            if committing is not None and not committing.done():
                # Stopped by a failure: the commit's flush may wait for a broker that cannot
                # answer (a deleted topic's metadata), and nothing may be committed now.
                committing.cancel()
                await asyncio.gather(committing, return_exceptions=True)

    async def _round(self, busy: bool) -> int:
        """Fetch, hand the records to their tasks, process some, hand the output to the
        producer; returns the records processed."""
        assert self.manager is not None and self.sink is not None
        manager = self.manager
        manager.apply_backpressure(self.memory.input_bytes)
        # Exactly-once: a revocation (which holds the lock) never comes between fetching
        # records and handing them to their tasks.
        async with self.transaction if self.exactly_once else contextlib.nullcontext():
            await self.global_tables.poll()  # table updates before the records fetched next
            fetched = await self.consumer.getmany(timeout_ms=0 if busy else 100, max_records=5_000)
            manager.route(fetched)
            processed = manager.process(time.monotonic() * 1000, self.consumer.lag)
            await self.sink.drain()
        return processed

    async def _commit(self) -> bool:
        """Commit every task's input offsets once all they caused is safe (at_least_once.py),
        or the open transaction under exactly-once; False: put off while the group member
        rejoins (exactly_once.py)."""
        if self.exactly_once:
            async with self.transaction:
                return await self._commit_open_transaction()
        await self._commit_tasks()
        return True

    async def _commit_tasks(self) -> None:
        async with self._commit_lock:
            await commit_tasks(self)

    async def _flush(self) -> None:
        async with self._commit_lock:  # between commits, on live traffic (pacing.py)
            if not self.commits_refused:
                await self.state.flush()

    async def _commit_open_transaction(self) -> bool:
        assert self.manager is not None and self.sink is not None and self._txn is not None
        committed = await commit_transaction(
            self._txn,
            self.manager,
            sink=self.sink,
            state=self.state,
            consumer=self.consumer,
            purger=self.purger,
        )
        if committed:
            self.last_commit_ms = int(time.time() * 1000)
        return committed

    async def _commit_transaction(self, tasks: frozenset[TaskId]) -> None:
        """A revocation's commit (the task manager holds the transaction lock): the member
        has its new generation by then, so this commits or raises."""
        if not await self._commit_open_transaction():
            raise TasksLost(f"{len(tasks)} revoked tasks not committed: the member rejoined")
