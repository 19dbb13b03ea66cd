"""The benchmarks' worker process reports its running tasks: bench/scale_out.py and
bench/brokers.py wait on these status lines, and a worker whose status stops at its first
assignment (as after a change of the task manager's internals) makes them time out. Its memory
there too: bench/live_latency.py compares the budget's count with the RSS, and with
--memory-probe places it by allocator beside the budget's parts, and on SIGUSR1 counts the
Python objects by type."""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from ads_join import topic_names
from runner_process import RunnerProcess, settled, until

PARTITIONS = 2

pytestmark = pytest.mark.broker


async def test_status_lines_show_running_tasks(broker: Broker, tmp_path: Path) -> None:
    prefix = f"runner-{uuid.uuid4().hex[:6]}"
    await ensure_topics(broker.bootstrap, [TopicSpec(t, PARTITIONS) for t in topic_names(prefix)])
    worker = RunnerProcess(
        "worker",
        [
            prefix,
            "--bootstrap",
            broker.bootstrap,
            "--state-dir",
            str(tmp_path / "state"),
            "--memory-probe",
        ],
        tmp_path / "worker.log",
    )
    started = time.time()
    await worker.start()
    try:
        await until(lambda: settled([worker], PARTITIONS, started), 60, "both tasks running")
        assert worker.latest is not None
        assert len(worker.latest.running) == PARTITIONS
        assert worker.latest.rss > worker.latest.budgeted > 0  # what bench/live_latency.py reads
        memory = worker.latest.memory
        assert memory is not None
        assert memory["rss_anon"] + memory["rss_file"] > memory["python_arenas"] > 0
        assert memory["glibc_heap"] > memory["budget_write_buffers"] >= 0
        assert {"budget_recent_records", "budget_pending_non_matches", "budget_input"} < set(memory)
        os.kill(worker.pid, signal.SIGUSR1)
        await until(lambda: bool(worker.censuses), 30, "a census")
        types = {row["type"]: row for row in worker.censuses[0]}
        assert types["dict"]["objects"] > 0 and types["dict"]["bytes"] > 0
    except TimeoutError:
        pytest.fail(f"latest status {worker.latest}; log:\n{worker.log_tail()}")
    finally:
        await worker.stop()
