"""One endpoint for the processes of a host (prometheus_client's multiprocess mode): real child
processes mirror their registries into the directory, the host's registry reads them all."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streamjoin.metrics import MetricsRegistry
from streamjoin.metrics.multiprocess import (
    MULTIPROC_ENV,
    host_registry,
    prepare_directory,
    process_exited,
)

_CHILD = """
import json, os, sys
from streamjoin.metrics import MetricsRegistry
from streamjoin.metrics.multiprocess import ProcessMirror

steps = json.loads(sys.argv[2])
state = {}
registry = MetricsRegistry()
registry.register("records_in_total", "counter", "Records in",
                  lambda: [((("topic", t),), n) for t, n in state["in"].items()])
registry.register("consumer_lag", "gauge", "Lag",
                  lambda: [((("partition", p),), n) for p, n in state["lag"].items()])
mirror = ProcessMirror(registry, sys.argv[1])
for step in steps:
    state.update(step)
    mirror.sync()
print(os.getpid())
"""


def run_child(directory: Path, process: str, *steps: dict[str, dict[str, float]]) -> int:
    """A process that mirrors its registry once per step, then exits; returns its pid."""
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, process, json.dumps(steps)],
        env={**os.environ, MULTIPROC_ENV: str(directory)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    return int(child.stdout)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_host_endpoint_answers_for_every_process(tmp_path: Path) -> None:
    directory = prepare_directory(tmp_path / "metrics")
    first = run_child(
        directory,
        "0",
        {"in": {"clicks": 5}, "lag": {"0": 7, "1": 2}},
        {"in": {"clicks": 9}, "lag": {"0": 3}},  # partition 1 moved to another process
    )
    run_child(directory, "1", {"in": {"clicks": 4, "views": math.inf}, "lag": {"1": 6}})
    restarts = MetricsRegistry()
    restarts.register("process_restarts_total", "counter", "Restarts", lambda: [((), 1)])
    text = generate_latest(host_registry(directory, restarts)).decode()
    found = samples(text)
    assert found[("streamjoin_records_in_total", (("process", "0"), ("topic", "clicks")))] == 9
    assert found[("streamjoin_records_in_total", (("process", "1"), ("topic", "clicks")))] == 4
    assert ("streamjoin_records_in_total", (("process", "1"), ("topic", "views"))) not in found
    lag = {k[1]: v for k, v in found.items() if k[0] == "streamjoin_consumer_lag"}
    assert lag == {
        (("partition", "0"), ("process", "0")): 3,
        (("partition", "1"), ("process", "0")): 0,
        (("partition", "1"), ("process", "1")): 6,
    }
    assert found[("streamjoin_process_restarts_total", ())] == 1
    assert "# TYPE streamjoin_records_in_total counter" in text
    assert "# TYPE streamjoin_consumer_lag gauge" in text

    # Process 0 restarts: its counters go on from its predecessor's, its old gauges are gone.
    process_exited(directory, first)
    run_child(directory, "0", {"in": {"clicks": 2}, "lag": {"0": 1}})
    found = samples(generate_latest(host_registry(directory)).decode())
    assert found[("streamjoin_records_in_total", (("process", "0"), ("topic", "clicks")))] == 11
    lag = {k[1]: v for k, v in found.items() if k[0] == "streamjoin_consumer_lag"}
    assert lag[(("partition", "0"), ("process", "0"))] == 1


def test_a_counter_that_goes_back_counts_from_there(tmp_path: Path) -> None:
    directory = prepare_directory(tmp_path / "metrics")
    run_child(directory, "0", {"in": {"t": 10}, "lag": {}}, {"in": {"t": 3}, "lag": {}})
    found = samples(generate_latest(host_registry(directory)).decode())
    assert found[("streamjoin_records_in_total", (("process", "0"), ("topic", "t")))] == 13


def test_the_directory_is_emptied_as_the_host_starts(tmp_path: Path) -> None:
    directory = prepare_directory(tmp_path / "metrics")
    run_child(directory, "0", {"in": {"t": 10}, "lag": {}})
    prepare_directory(directory)
    assert list(directory.iterdir()) == []
    assert samples(generate_latest(host_registry(directory)).decode()) == {}
