"""A backlog through a key_by joins every pair (issue 35 item 1), with default settings, on the
embedded broker and on Apache Kafka: bench/keyby_backlog_scenario.py's 2,000 orders and 1,544
payments re-keyed by order id, loaded in time order, first into one worker, then (a second
batch into the same topics) into three. A third batch loaded one input after the other makes
payments late (they miss their orders): the workers say so while it happens, and count them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from streamjoin.broker import Broker

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from keyby_backlog_scenario import PARTITIONS, Scenario, Workers, load, make_topics, read_joined

pytestmark = [pytest.mark.broker, pytest.mark.slow]

TASKS = 2 * PARTITIONS
"""The join's tasks and the key_by's."""


async def _joins_every_pair(bootstrap: str, scenario: Scenario, workers: Workers) -> None:
    await load(bootstrap, scenario, "in time order")
    joined = await read_joined(bootstrap, scenario, settle_s=20, within_s=180)
    missing = scenario.expected - len(joined)
    assert not missing, f"batch {scenario.batch}: {missing} pairs missing\n{workers.logs()}"


async def test_a_backlog_through_key_by_joins_every_pair(
    each_broker: Broker, unique: str, tmp_path: Path
) -> None:
    bootstrap = each_broker.bootstrap
    first = Scenario(unique, batch=0)
    await make_topics(bootstrap, first)
    workers = Workers(bootstrap, unique, tmp_path)
    try:
        workers.start("w1")
        await workers.until_all_run(TASKS, within_s=120)
        await _joins_every_pair(bootstrap, first, workers)

        workers.start("w2")
        workers.start("w3")
        await workers.until_all_run(TASKS, within_s=180)
        await _joins_every_pair(bootstrap, Scenario(unique, batch=1), workers)

        late = Scenario(unique, batch=2)
        await load(bootstrap, late, "one after the other")
        joined = await read_joined(bootstrap, late, settle_s=10, within_s=120)
        warned = [
            line
            for name in workers.processes
            for line in workers.log(name).splitlines()
            if "came late" in line
        ]
    finally:
        codes = workers.stop_all()
    assert len(joined) < late.expected  # the orders ran ahead: payments came late
    assert warned, workers.logs()
    assert "re-keyed through" in warned[0] and "JoinWindows(grace=...)" in warned[0], warned[0]
    summaries = [
        line
        for name in workers.processes
        for line in workers.log(name).splitlines()
        if " late records " in line and "join paid:" in line
    ]
    counted = sum(int(line.split(" late records")[0].rsplit(", ", 1)[1]) for line in summaries)
    assert counted >= late.expected - len(joined), summaries  # each missed payment was late
    assert codes == {"w1": 0, "w2": 0, "w3": 0}, workers.logs()
