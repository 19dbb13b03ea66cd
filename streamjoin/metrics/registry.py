"""A small metrics registry rendered in the Prometheus text format (version 0.0.4).

Values are read at scrape time from callables, so the hot path never touches the registry:
the worker's own counters are the source of truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ("Metric", "MetricsRegistry", "Sample")

Labels = tuple[tuple[str, str], ...]
Sample = tuple[Labels, float]


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: str  # "counter" or "gauge"
    help: str
    collect: Callable[[], Iterable[Sample]]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format(name: str, labels: Labels, value: float) -> str:
    text = f"{value:.17g}" if value != int(value) else str(int(value))
    if not labels:
        return f"{name} {text}"
    inner = ",".join(f'{key}="{_escape(val)}"' for key, val in labels)
    return f"{name}{{{inner}}} {text}"


class MetricsRegistry:
    def __init__(self, prefix: str = "streamjoin") -> None:
        self.prefix = prefix
        self._metrics: dict[str, Metric] = {}

    def register(
        self, name: str, kind: str, help: str, collect: Callable[[], Iterable[Sample]]
    ) -> None:
        full = f"{self.prefix}_{name}"
        if full in self._metrics:
            raise ValueError(f"metric {full} is registered twice")
        self._metrics[full] = Metric(full, kind, help, collect)

    def clear(self) -> None:
        """Forget every metric (a worker starting over registers its own again), keeping the
        registry that servers already render."""
        self._metrics.clear()

    def render(self) -> str:
        lines: list[str] = []
        for metric in self._metrics.values():
            lines.append(f"# HELP {metric.name} {metric.help}")
            lines.append(f"# TYPE {metric.name} {metric.kind}")
            lines.extend(_format(metric.name, labels, value) for labels, value in metric.collect())
        return "\n".join(lines) + "\n"
