"""One Prometheus endpoint for the worker processes of a host (`streamjoin worker --processes
N`), with prometheus_client's multiprocess mode.

The supervisor gives each child PROMETHEUS_MULTIPROC_DIR (a directory it empties as it starts);
a child mirrors its registry into prometheus_client metrics every second and as it stops, and
multiprocess mode keeps their values in files there; the supervisor's endpoint reads every
child's files on each scrape (MultiProcessCollector). So a scrape answers for the whole host,
at most a second behind, with every sample labelled `process="<index>"` (a sum over the host is
PromQL's `sum without (process)`).

- Counters add up over a process's incarnations: a restarted process goes on from its
  predecessor's total (Prometheus's counter semantics; a counter that went back, as when a
  worker starts its tasks over, counts from there again).
- Gauges are `livesum`: only live processes count; the supervisor drops a dead child's as it
  sees it exit (mark_process_dead). A sample a process no longer reports (a partition that moved
  to another) stays in its files at 0, which sums right.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from streamjoin.metrics.registry import MetricsRegistry

__all__ = (
    "MIRROR_INTERVAL_S",
    "MULTIPROC_ENV",
    "ProcessMirror",
    "host_registry",
    "prepare_directory",
    "process_exited",
)

logger = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client reads it as it is imported: the supervisor sets it in a child's environment."""
MIRROR_INTERVAL_S = 1.0
_WARN_EVERY_S = 60.0

_LabelSet = tuple[tuple[str, str], ...]
_Key = tuple[str, _LabelSet]


def prepare_directory(path: Path) -> Path:
    """`path`, emptied: files of an earlier run would count as processes of this one."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def host_registry(path: Path, *own: Collector) -> CollectorRegistry:
    """What the host's endpoint renders: every process's mirrored metrics, and `own`."""
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry, path=str(path))  # type: ignore[no-untyped-call]
    for collector in own:
        registry.register(collector)
    return registry


def process_exited(path: Path, pid: int) -> None:
    """Drop the gauges of a child that ended (its counters keep counting for the host)."""
    mark_process_dead(pid, str(path))  # type: ignore[no-untyped-call]


class ProcessMirror:
    """Copies a registry's values into multiprocess-mode metrics, labelled with `process`."""

    def __init__(self, registry: MetricsRegistry, process: str) -> None:
        if MULTIPROC_ENV not in os.environ:
            raise RuntimeError(f"{MULTIPROC_ENV} is not set: nothing would reach the endpoint")
        self._registry = registry
        self._process = process
        self._metrics: dict[str, Counter | Gauge] = {}
        self._counted: dict[_Key, float] = {}
        """Each counter sample's value as last mirrored."""
        self._gauges: dict[str, set[_LabelSet]] = {}
        """Each gauge's label sets as last mirrored: those no longer reported go to 0."""
        self._warned_at = -math.inf

    def sync(self) -> None:
        """Mirror every metric now; a metric that fails to collect is logged (once a minute)
        and the others are mirrored."""
        try:
            families = list(self._registry.collect())
        except Exception as exc:  # noqa: BLE001 - a failing metric must not stop the mirror
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY_S:
                self._warned_at = now
                logger.warning("metrics not mirrored to the host's endpoint: %r", exc)
            return
        for family in families:
            reported: set[_LabelSet] = set()
            for sample in family.samples:
                labels = {"process": self._process, **sample.labels}
                metric = self._metric(family.name, family.type, family.documentation, labels)
                if isinstance(metric, Counter):
                    self._count(metric, family.name, labels, sample.value)
                else:
                    metric.labels(**labels).set(sample.value)
                reported.add(tuple(sorted(labels.items())))
            if family.type == "gauge":
                self._zero_unreported(family.name, reported)

    def _metric(self, name: str, kind: str, help: str, labels: dict[str, str]) -> Counter | Gauge:
        metric = self._metrics.get(name)
        if metric is None:
            names = sorted(labels)
            metric = (
                Counter(name, help, names, registry=None)
                if kind == "counter"
                else Gauge(name, help, names, registry=None, multiprocess_mode="livesum")
            )
            self._metrics[name] = metric
        return metric

    def _count(self, counter: Counter, name: str, labels: dict[str, str], value: float) -> None:
        if not math.isfinite(value):
            return
        key = (name, tuple(sorted(labels.items())))
        last = self._counted.get(key, 0.0)
        increase = value - last if value >= last else value  # went back: counts from there
        if increase > 0:
            counter.labels(**labels).inc(increase)
        self._counted[key] = value

    def _zero_unreported(self, name: str, reported: set[_LabelSet]) -> None:
        metric = self._metrics.get(name)
        if isinstance(metric, Gauge):
            for gone in self._gauges.get(name, set()) - reported:
                metric.labels(**dict(gone)).set(0)
        self._gauges[name] = reported
