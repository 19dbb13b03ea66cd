"""Scale-out reaches the task assignor's balanced target by follow-up rebalances, with and without
standbys, whatever the newcomer's capacity: one worker then a second (with standbys, the moves warm
up in the newcomer's standby slots, no learner at all), and two then a third (warm-ups as learners
and in standby slots).

The bound each case must meet comes from the settings, not from the probing interval (600 s
here, so waiting for it fails): each follow-up is one cooperative move, that is two join rounds
(revoke, then assign), and a warm-up catches up on a few hundred records within a second. The
moves go in one step when every warm-up fits in a standby slot or the learner budget, else in
ceil(moves / budget) steps. On the embedded broker a join round takes about 4 s
(docs/broker-facts.md), so a case gets ROUND_S per round, for the first join and two rounds per
step, plus RESTORE_S.
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import harness
import pytest

from streamjoin.broker import Broker
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.runtime.topology.app_topology import TaskId

pytestmark = [pytest.mark.broker, pytest.mark.slow]

PARTITIONS = 6
RECORDS = 1_200
MAX_WARMUPS = 2
ROUND_S = 10.0  # a join round, about 4 s on the embedded broker, with room for a loaded machine
RESTORE_S = 10.0


def balanced(counts: list[int], capacities: list[int]) -> bool:
    """Every worker within one task of its capacity share (the assignor's balance)."""
    total, slots = sum(counts), sum(capacities)
    return (
        all(
            math.floor(total * c / slots) - 1 <= n <= math.ceil(total * c / slots) + 1
            for n, c in zip(counts, capacities, strict=True)
        )
        and max(n / c for n, c in zip(counts, capacities, strict=True))
        - min(n / c for n, c in zip(counts, capacities, strict=True))
        <= 1
    )


CASES = [
    *((1, standbys, 1) for standbys in (0, 1)),
    *((2, standbys, capacity) for standbys in (0, 1, 2) for capacity in (1, 2)),
]


@pytest.mark.parametrize(
    ("before", "standbys", "new_capacity"),
    CASES,
    ids=[f"{b}to{b + 1}-standbys{s}-capacity{c}" for b, s, c in CASES],
)
async def test_a_new_worker_gets_its_share_by_follow_up_rebalances(
    broker: Broker,
    unique: str,
    tmp_path: Path,
    before: int,
    standbys: int,
    new_capacity: int,
) -> None:
    bs = broker.bootstrap
    app = harness.make_app(
        unique,
        acceptable_recovery_lag=0,
        num_standby_replicas=standbys,
        max_warmup_replicas=MAX_WARMUPS,
        probing_rebalance_interval_s=600,
    )
    await ensure_topics(bs, [TopicSpec(f"{t}-{unique}", PARTITIONS) for t in ("imp", "clk", "out")])
    capacities = [*([1] * before), new_capacity]
    running = [
        harness.Running(app, bs, tmp_path / f"w{i}", capacity=c) for i, c in enumerate(capacities)
    ]
    tasks = {TaskId("attribute", p) for p in range(PARTITIONS)}

    def settled(members: list[Any]) -> bool:
        """Every task runs once, no worker expects a follow-up, and the spread is balanced."""
        sets = [m.running_tasks() for m in members]
        if sum(len(s) for s in sets) != PARTITIONS or set().union(*sets) != tasks:
            return False
        roles = [m.worker.manager.roles for m in members]
        if any(r.next_probe_ms is not None or r.roles().warmup for r in roles):
            return False
        return balanced([len(s) for s in sets], capacities[: len(members)])

    async with harness.workers(*running):
        *old, newcomer = running
        for worker in old:
            await worker.start()
        await harness.until(lambda: settled(old), 60, "the first workers settle")
        await harness.send(bs, f"imp-{unique}", range(RECORDS), partitions=PARTITIONS)
        await asyncio.sleep(3)  # processed, committed, tailed by the standbys

        moves = round(PARTITIONS * new_capacity / sum(capacities))
        warm_slots = MAX_WARMUPS if standbys == 0 else moves
        steps = math.ceil(moves / warm_slots)
        bound = ROUND_S * (1 + 2 * steps) + RESTORE_S
        started = time.monotonic()
        await newcomer.start()
        took = await harness.until(lambda: settled(running), bound, "the balanced target")
        counts = [len(m.running_tasks()) for m in running]
        print(
            f"{before} -> {before + 1} workers, standbys {standbys}, new capacity "
            f"{new_capacity}: balanced {counts} {time.monotonic() - started:.1f} s after the "
            "new worker started "
            f"(bound {bound:.0f} s, {steps} step(s))"
        )
        assert took < bound
        await harness.send(
            bs,
            f"clk-{unique}",
            range(RECORDS),
            ts0=harness.EVENT_T0 + 100_000,
            partitions=PARTITIONS,
        )
        expected, seen = set(range(RECORDS)), set[int]()
        deadline = time.monotonic() + 40
        while seen != expected and time.monotonic() < deadline:
            seen = await harness.joined(bs, f"out-{unique}", partitions=PARTITIONS)
        assert seen == expected, f"missing: {sorted(expected - seen)[:20]}"
