"""What a worker builds around its tasks' state: the state manager with what follows its
restores (metrics, progress bars), and the roles it reports to the task assignor."""

from __future__ import annotations

import socket
from pathlib import Path

from aiokafka import AIOKafkaProducer

from streamjoin.assignment.tasks.model import AssignorSettings
from streamjoin.dsl.settings import AppSettings
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.process.identity import process_id
from streamjoin.runtime.process.metrics import RestoreTracker
from streamjoin.runtime.process.options import WorkerOptions
from streamjoin.runtime.process.progress import RestoreProgressBars
from streamjoin.runtime.tasks.roles import WorkerRoles
from streamjoin.runtime.topology.app_topology import AppTopology
from streamjoin.state.manager import StateConfig, StateManager
from streamjoin.state.memory import MemoryBudget
from streamjoin.state.reader import ReaderConfig

__all__ = ("task_state", "worker_roles")


def task_state(
    *,
    state_dir: Path | str,
    app_id: str,
    kafka: KafkaConnection,
    producer: AIOKafkaProducer,
    memory: MemoryBudget,
    isolation_level: str,
) -> tuple[StateManager, RestoreTracker, RestoreProgressBars | None]:
    """The tasks' state, with what follows its restores (metrics, progress bars)."""
    state = StateManager(
        state_dir=state_dir,
        app_id=app_id,
        bootstrap=kafka,
        producer=producer,
        memory=memory,
        config=StateConfig(reader=ReaderConfig(isolation_level=isolation_level)),
    )
    restores = RestoreTracker()
    state.subscribe(restores)
    bars = RestoreProgressBars() if RestoreProgressBars.wanted() else None
    if bars is not None:
        state.subscribe(bars)
    return state, restores, bars


def worker_roles(
    topology: AppTopology,
    state: StateManager,
    *,
    settings: AppSettings,
    options: WorkerOptions,
) -> WorkerRoles:
    """The tasks this worker holds in each role, and what it tells the assignor (its
    capacity, its query endpoint, the assignor's settings)."""
    port = options.metrics_port
    return WorkerRoles(
        topology,
        state,
        process_id=process_id(state.directory.app_dir),
        capacity=options.capacity,
        endpoint=f"{socket.gethostname()}:{port}" if port else None,
        probing_interval_ms=int(settings.probing_rebalance_interval_s * 1000),
        settings=AssignorSettings(
            acceptable_recovery_lag=settings.acceptable_recovery_lag,
            max_warmup_replicas=settings.max_warmup_replicas,
            num_standby_replicas=settings.num_standby_replicas,
        ),
    )
