from __future__ import annotations

import pytest

from streamjoin.errors import ConfigurationError
from streamjoin.state.specs import StoreKind, StoreSpec, TaskSpec


def test_window_defaults_follow_kafka_streams() -> None:
    assert StoreSpec.window("w", retention_ms=10_000).segment_interval_ms == 60_000
    assert StoreSpec.window("w", retention_ms=600_000).segment_interval_ms == 300_000
    assert StoreSpec.window("w", retention_ms=100, segment_interval_ms=10).segment_interval_ms == 10
    assert StoreSpec.kv("k").kind is StoreKind.KEY_VALUE


@pytest.mark.parametrize("name", ["", "a/b", "..", ".hidden", "x" * 201, "sp ace"])
def test_unsafe_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid store name"):
        StoreSpec.kv(name)


def test_window_needs_positive_retention() -> None:
    with pytest.raises(ConfigurationError, match="retention_ms must be positive"):
        StoreSpec.window("w", retention_ms=0)
    with pytest.raises(ConfigurationError, match="segment_interval_ms must be positive"):
        StoreSpec.window("w", retention_ms=10, segment_interval_ms=0)


def test_task_spec_checks_partition_and_store_names() -> None:
    with pytest.raises(ConfigurationError, match=r"partition 4 is not within 0\.\.3"):
        TaskSpec("t", 4, 4, ())
    with pytest.raises(ConfigurationError, match="store names repeat: a"):
        TaskSpec("t", 0, 1, (StoreSpec.kv("a"), StoreSpec.kv("a")))
    with pytest.raises(ConfigurationError, match="invalid task name"):
        TaskSpec("a/b", 0, 1, ())
