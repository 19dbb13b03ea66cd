"""One Prometheus endpoint for the worker processes of a host: their texts merged."""

from __future__ import annotations

from streamjoin.metrics import MetricsRegistry
from streamjoin.metrics.merge import merge_expositions


def registry(tasks: float, lag: dict[str, float]) -> MetricsRegistry:
    metrics = MetricsRegistry()
    metrics.register("active_tasks", "gauge", "Active tasks", lambda: [((), tasks)])
    metrics.register(
        "consumer_lag",
        "gauge",
        "Lag by partition",
        lambda: [((("partition", p),), value) for p, value in lag.items()],
    )
    return metrics


def test_each_family_once_with_every_process_labelled() -> None:
    merged = merge_expositions(
        {"0": registry(2, {"t-0": 5}).render(), "1": registry(3, {"t-1": 7, "t-2": 0}).render()}
    )
    assert merged.splitlines() == [
        "# HELP streamjoin_active_tasks Active tasks",
        "# TYPE streamjoin_active_tasks gauge",
        'streamjoin_active_tasks{process="0"} 2',
        'streamjoin_active_tasks{process="1"} 3',
        "# HELP streamjoin_consumer_lag Lag by partition",
        "# TYPE streamjoin_consumer_lag gauge",
        'streamjoin_consumer_lag{process="0",partition="t-0"} 5',
        'streamjoin_consumer_lag{process="1",partition="t-1"} 7',
        'streamjoin_consumer_lag{process="1",partition="t-2"} 0',
    ]


def test_a_process_not_serving_yet_is_left_out() -> None:
    merged = merge_expositions({"0": "", "1": registry(1, {}).render()})
    assert 'streamjoin_active_tasks{process="1"} 1' in merged.splitlines()
    assert 'process="0"' not in merged
