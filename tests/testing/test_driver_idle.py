"""The test driver orders records as a worker's task does: with `max_task_idle_ms` above 0 a task
holds records while an input has none, until that input gets one or the driver's wall clock has
moved on by `max_task_idle_ms` (as Kafka Streams' TopologyTestDriver; the differential suite
checks the same against it on random scenarios)."""

from __future__ import annotations

from streamjoin import App, JoinWindows
from streamjoin.testing import TestDriver


def app(max_task_idle_ms: int) -> App:
    joins = App("idle", max_task_idle_ms=max_task_idle_ms)
    left, right = joins.topic("left", value_type=str), joins.topic("right", value_type=str)
    window = JoinWindows(before=5, after=5)

    @joins.join(left, right, window=window, into=joins.topic("out", value_type=str))
    def pair(l_value: str, r_value: str) -> str:
        return f"{l_value}+{r_value}"

    return joins


def test_a_task_waits_for_its_empty_input_and_then_processes_in_timestamp_order() -> None:
    with TestDriver(app(max_task_idle_ms=100)) as driver:
        driver.pipe("left", "L1", key="a", timestamp=10)
        driver.pipe("left", "L2", key="a", timestamp=30)
        driver.pipe("right", "R1", key="a", timestamp=28)  # L1 and R1 go; L2 waits for right
        assert driver.read_output("out") == []
        driver.advance_wall_clock(99)
        assert driver.read_output("out") == []
        driver.advance_wall_clock(1)
        assert [(r.value, r.timestamp) for r in driver.read_output("out")] == [("L2+R1", 30)]


def test_a_record_arriving_for_the_empty_input_releases_the_waiting_ones_in_time_order() -> None:
    with TestDriver(app(max_task_idle_ms=100)) as driver:
        driver.pipe("left", "L1", key="a", timestamp=10)
        driver.pipe("right", "R1", key="a", timestamp=6)  # R1 goes; L1 waits for right again
        assert driver.read_output("out") == []
        driver.pipe("right", "R2", key="a", timestamp=20)  # L1 goes (and joins R1); R2 waits
        assert [(r.value, r.timestamp) for r in driver.read_output("out")] == [("L1+R1", 10)]


def test_without_idling_each_record_is_processed_as_it_is_piped() -> None:
    with TestDriver(app(max_task_idle_ms=0)) as driver:
        driver.pipe("left", "L1", key="a", timestamp=10)
        driver.pipe("right", "R1", key="a", timestamp=12)
        assert [r.value for r in driver.read_output("out")] == ["L1+R1"]
