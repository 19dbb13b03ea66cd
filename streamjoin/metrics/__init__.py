"""Prometheus metrics for the worker."""

from streamjoin.metrics.registry import MetricsRegistry
from streamjoin.metrics.server import MetricsServer

__all__ = ("MetricsRegistry", "MetricsServer")
