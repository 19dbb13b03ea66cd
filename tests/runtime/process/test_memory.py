"""The worker's memory budget from the app's settings and `--memory`, and its metrics."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from streamjoin.dsl.app import App
from streamjoin.metrics import MetricsRegistry
from streamjoin.runtime.process.memory import memory_budget, register_memory_metrics
from streamjoin.state.manager import StateManager
from streamjoin.state.specs import StoreSpec, TaskSpec
from streamjoin.state.task_state import TaskState

MIB = 1 << 20


def test_the_command_line_overrides_the_apps_budget() -> None:
    app = App("a", memory_budget_bytes=64 * MIB, window_memory_bytes=16 * MIB)
    assert memory_budget(app.settings).total_bytes == 64 * MIB
    overridden = memory_budget(app.settings, 512 * MIB)
    assert (overridden.total_bytes, overridden.recent_bytes) == (512 * MIB, 16 * MIB)


def test_a_bad_memory_option_is_one_line_without_traceback() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "streamjoin", "worker", "app:joins", "--memory", "lots"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "memory size 'lots' is not understood" in run.stderr
    assert "Traceback" not in run.stderr


class _Discard:
    def append(self, key: bytes, value: bytes | None, timestamp: int | None = None) -> None:
        pass


async def test_metrics_report_memory_by_kind_and_by_task(tmp_path: Path) -> None:
    state = StateManager(state_dir=tmp_path, app_id="a", bootstrap="localhost:1", producer=None)
    registry = MetricsRegistry()
    register_memory_metrics(registry, state, lambda: 12_345)
    spec = TaskSpec("j_0", 0, 1, (StoreSpec.window("j-left", retention_ms=60_000),))
    # A task opened without changelogs (no broker here), as StateManager opens one.
    task = TaskState(
        spec,
        app_id="a",
        directory=state.directory,
        producer=None,
        reader=state._reader,
        events=state.events,
        progress_interval_s=0.5,
        memory=state.memory,
    )
    state._tasks["j_0"] = task
    try:
        window = task.window("j-left")
        window.attach_writer(_Discard())  # type: ignore[arg-type]
        for ts in range(10):
            window.put(b"k", ts, b"v" * 50)
        recent = window.recent_bytes
        text = registry.render()
    finally:
        task.local.close()
    assert recent > 0
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert found[("streamjoin_state_memory_bytes", (("kind", "recent_records"),))] == recent
    assert ("streamjoin_state_memory_bytes", (("kind", "write_buffers"),)) in found
    assert found[("streamjoin_state_memory_budget_bytes", (("kind", "total"),))] == 268435456
    assert found[("streamjoin_state_memory_bytes", (("kind", "input_buffers"),))] == 12345
    budget = found[("streamjoin_state_memory_budget_bytes", (("kind", "input_buffers"),))]
    assert budget == 16777216
    task_recent = (("kind", "recent_records"), ("task", "j_0"))
    assert found[("streamjoin_task_memory_bytes", task_recent)] == recent
