"""The worker's two Kafka clients: its one producer (outputs, dead letters, changelogs,
repartition topics) and its member of the group, fetching the tasks' inputs."""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka import AIOKafkaProducer

from streamjoin.assignment.model import PartitionAssignor
from streamjoin.dsl.app import App
from streamjoin.dsl.settings import AppSettings
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.listener import RebalanceListener
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.output.transaction_state import transaction_timeout_ms
from streamjoin.runtime.process.options import WorkerOptions

__all__ = ("worker_consumer", "worker_producer")

FETCH_MAX_WAIT_MS = 50
"""How long the broker may hold a fetch that finds nothing new. aiokafka keeps one fetch in
flight per broker: a partition whose buffered records were just drained is not fetched again
until the one in flight returns, and a task waiting for that side's known records waits with it.
With Apache Kafka's (and the client's) default 500 ms, a worker on the ad join ran at 20-50% of
a plain consume-produce pipe; at 50 ms, 73% (bench/join_throughput.py --brokers kafka). Tansu
answers at once, so it was not seen there. The cost: an idle worker asks 20 times a second."""


def worker_producer(
    kafka: KafkaConnection,
    settings: AppSettings,
    commit_interval_s: float,
    transactional_id: str | None,
) -> AIOKafkaProducer:
    """Sends wait for a broker that is away as long as the worker waits for it: the broker
    watch decides when to give up, not the client."""
    wait_ms = int(settings.broker_unavailable_timeout_s * 1000)
    return kafka.producer(
        acks="all",
        linger_ms=5,
        max_batch_size=256 * 1024,
        request_timeout_ms=max(40_000, wait_ms),
        max_request_size=max(1_048_576, settings.max_record_bytes + 65_536),
        transactional_id=transactional_id,
        enable_idempotence=transactional_id is not None,
        transaction_timeout_ms=transaction_timeout_ms(commit_interval_s),
    )


def worker_consumer(
    topics: Iterable[str],
    kafka: KafkaConnection,
    app: App,
    options: WorkerOptions,
    *,
    assignor: PartitionAssignor,
    listener: RebalanceListener,
    isolation_level: str,
    fetch_buffer_bytes: int,
) -> CooperativeConsumer:
    """`fetch_buffer_bytes`: the memory budget's part for fetch answers not yet read."""
    return CooperativeConsumer(
        *topics,
        bootstrap_servers=kafka.bootstrap,
        security=kafka.security,
        group_id=app.app_id,
        assignors=(assignor,),
        listener=listener,
        enable_auto_commit=False,
        auto_offset_reset=app.settings.auto_offset_reset,
        fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
        isolation_level=isolation_level,
        session_timeout_ms=options.session_timeout_ms,
        heartbeat_interval_ms=options.heartbeat_interval_ms,
        group_instance_id=options.group_instance_id,
        fetch_buffer_bytes=fetch_buffer_bytes,
    )
