"""The worker's memory budget: built from the app's settings, watched through metrics."""

from __future__ import annotations

from collections.abc import Callable

from streamjoin.dsl.settings import AppSettings
from streamjoin.metrics.registry import MetricsRegistry, Sample
from streamjoin.state.manager import StateManager
from streamjoin.state.memory import MemoryBudget

__all__ = ("memory_budget", "register_memory_metrics")


def memory_budget(settings: AppSettings, total_bytes: int | None = None) -> MemoryBudget:
    """The budget of one worker; `total_bytes` (`streamjoin worker --memory`) overrides the
    app's `memory_budget_bytes`."""
    return MemoryBudget(
        settings.memory_budget_bytes if total_bytes is None else total_bytes,
        recent_bytes=settings.window_memory_bytes,
        rocksdb_options=settings.rocksdb_options,
    )


def register_memory_metrics(
    registry: MetricsRegistry, state: StateManager, input_buffers: Callable[[], int]
) -> None:
    """`input_buffers()`: memory of the records waiting in the tasks' input buffers."""
    memory = state.memory

    def by_kind() -> list[Sample]:
        usage = memory.usage()
        return [
            ((("kind", "write_buffers"),), float(usage.write_buffers)),
            ((("kind", "block_cache"),), float(usage.block_cache)),
            ((("kind", "recent_records"),), float(usage.recent_records)),
            ((("kind", "pending_non_matches"),), float(usage.pending_non_matches)),
            ((("kind", "input_buffers"),), float(input_buffers())),
        ]

    def limits() -> list[Sample]:
        return [
            ((("kind", "total"),), float(memory.total_bytes)),
            ((("kind", "rocksdb"),), float(memory.rocksdb_bytes)),
            ((("kind", "write_buffers"),), float(memory.write_buffer_bytes)),
            ((("kind", "recent_records"),), float(memory.recent.max_bytes)),
            ((("kind", "pending_non_matches"),), float(memory.pending.max_bytes)),
            ((("kind", "input_buffers"),), float(memory.input_bytes)),
            ((("kind", "fetch_buffers"),), float(memory.fetch_bytes)),
        ]

    def by_task() -> list[Sample]:
        samples: list[Sample] = []
        for task_id, task in sorted(state.tasks.items()):
            local = task.local
            samples.append(
                ((("task", task_id), ("kind", "write_buffers")), float(local.write_buffer_bytes()))
            )
            samples.append(
                ((("task", task_id), ("kind", "recent_records")), float(local.recent_bytes))
            )
        return samples

    registry.register(
        "state_memory_bytes",
        "gauge",
        "Memory of the state stores, by kind (the block cache is shared: no task has a part)",
        by_kind,
    )
    registry.register(
        "state_memory_budget_bytes",
        "gauge",
        "The memory budget and its parts (the block cache holds the write buffers' charge)",
        limits,
    )
    registry.register(
        "task_memory_bytes",
        "gauge",
        "Memory of each task's stores: memtables and newest window records",
        by_task,
    )
