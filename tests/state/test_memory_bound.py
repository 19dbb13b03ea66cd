"""A worker's resident memory stays within its memory budget, whatever the number of stores.

The process under test opens 40 stores in one 128 MiB budget and writes 2 GB through them;
its RSS, read from /proc by this process, must stay under the budget plus a baseline measured
here: an interpreter with the package imported.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BUDGET = 128 << 20
STORES = 40
MEGABYTES = 2_000
WORKER = Path(__file__).with_name("budget_worker.py")


def rss_bytes(pid: int) -> int | None:
    """None once the process has exited (a zombie has no VmRSS)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def baseline_rss() -> int:
    """RSS of an interpreter that has imported what the worker imports."""
    probe = (
        "import streamjoin.state.stores.window_store, streamjoin.state.stores.kv_store, "
        "streamjoin.state.memory, sys; print('imported', flush=True); sys.stdin.readline()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", probe], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        assert process.stdout.readline() == b"imported\n"  # a loaded machine imports slowly
        size = rss_bytes(process.pid)
        assert size is not None
        process.stdin.write(b"\n")
    return size


def run_within_budget(state_dir: Path, mode: str, megabytes: int) -> None:
    """Run the budget worker in `mode`; its peak RSS must stay under baseline + budget."""
    baseline = baseline_rss()
    peak = 0
    lines: list[str] = []
    command = [sys.executable, str(WORKER), str(state_dir), str(BUDGET), str(STORES)]
    with subprocess.Popen(
        [*command, str(megabytes), mode], stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
        reader.start()
        while (size := rss_bytes(process.pid)) is not None:
            peak = max(peak, size)
            time.sleep(0.1)
        process.wait()
        reader.join(10)
    assert process.returncode == 0, lines[-5:]
    assert lines[-1] == "done\n"
    print(
        f"{mode}: baseline {baseline >> 20} MiB, peak {peak >> 20} MiB, budget "
        f"{BUDGET >> 20} MiB; last: {lines[-2].strip()}"
    )
    assert peak <= baseline + BUDGET, (
        f"{mode}: peak RSS {peak >> 20} MiB over baseline {baseline >> 20} MiB + budget "
        f"{BUDGET >> 20} MiB; {lines[-2].strip()}"
    )


@pytest.mark.timeout(900)
def test_rss_of_40_stores_writing_2_gb_stays_within_a_128_mib_budget(tmp_path: Path) -> None:
    run_within_budget(tmp_path, "process", MEGABYTES)


def test_a_restore_of_300_mb_into_40_stores_stays_within_the_budget(tmp_path: Path) -> None:
    """A restore skips RocksDB's write-ahead log and syncs only at its end: its memtables must
    still flush within the shared write buffers, not pile up until the sync."""
    run_within_budget(tmp_path, "restore", 300)
