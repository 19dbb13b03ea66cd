"""The worker's metrics as a prometheus_client custom collector: each metric is a callable read
at scrape time from the part that counts it, so the hot path never touches a metric object (the
worker's own counters are the source of truth). prometheus_client renders them: the text
format, label escaping, NaN and infinities.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ("Definition", "MetricsRegistry", "Sample")

Labels = tuple[tuple[str, str], ...]
Sample = tuple[Labels, float]

_FAMILIES: dict[str, type[CounterMetricFamily] | type[GaugeMetricFamily]] = {
    "counter": CounterMetricFamily,
    "gauge": GaugeMetricFamily,
}


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: str  # "counter" or "gauge"
    help: str
    collect: Callable[[], Iterable[Sample]]


class MetricsRegistry(Collector):
    def __init__(self, prefix: str = "streamjoin") -> None:
        self.prefix = prefix
        self._metrics: dict[str, Definition] = {}

    def register(
        self, name: str, kind: str, help: str, collect: Callable[[], Iterable[Sample]]
    ) -> None:
        full = f"{self.prefix}_{name}"
        if full in self._metrics:
            raise ValueError(f"metric {full} is registered twice")
        if kind not in _FAMILIES:
            raise ValueError(f"metric {full}: kind {kind!r} is not one of {sorted(_FAMILIES)}")
        self._metrics[full] = Definition(full, kind, help, collect)

    def clear(self) -> None:
        """Forget every metric (a worker starting over registers its own again), keeping the
        registry that servers already render."""
        self._metrics.clear()

    def collect(self) -> Iterator[Metric]:
        for metric in list(self._metrics.values()):
            samples = list(metric.collect())
            names = [key for key, _ in samples[0][0]] if samples else []
            family = _FAMILIES[metric.kind](metric.name, metric.help, labels=names)
            for labels, value in samples:
                family.add_metric([label for _, label in labels], value)
            yield family

    def render(self) -> str:
        """The text format (0.0.4) of every metric now."""
        return generate_latest(self).decode()
