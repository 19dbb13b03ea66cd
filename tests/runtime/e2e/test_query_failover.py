"""Queries while the owner of a key dies: two `streamjoin worker` processes with one standby per
task; the owner is killed with SIGKILL. A stale read answers the latest value from the standby,
with its lag, all along; a read without stale answers 502/503 until the new active runs, then
the same value."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from pathlib import Path

import pytest
from test_queries import PARTITIONS, USERS, get, make_topics, produce, table_task
from worker_processes import EVENT_T0, Workers

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def placed(url: str, store: str) -> dict[int, tuple[str | None, list[str]]]:
    """Partition -> (active, standbys) of `store`'s tasks, as the worker at `url` knows them."""
    try:
        status, listing, _ = await get(f"{url}/stores")
    except OSError:
        return {}
    if status != 200:
        return {}
    table = next(s for s in listing["stores"] if s["name"] == store)
    return {t["partition"]: (t["active"], t["standby"]) for t in table["tasks"]}


async def key_owned_by(owner: str, other: str, store: str, within: float) -> str:
    """A user whose table task runs on `owner`, with a standby on `other` that holds its value
    and has caught up, once `other` forwards a fresh read of it to `owner` (a probing rebalance
    may still be moving tasks when the standbys first report)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        where = await placed(other, store)
        if len(where) == PARTITIONS and all(a and len(s) == 1 for a, s in where.values()):
            for user in USERS:
                if where[table_task(user).partition][0] != owner:
                    continue
                url = f"{other}/stores/{store}/keys/{user}"
                status, answer, _ = await get(url, stale="true", forwarded="1")
                if status != 200 or (answer["role"], answer["lag_records"]) != ("standby", 0):
                    continue
                status, answer, _ = await get(f"{other}/stores/{store}/keys/{user}")
                if status == 200 and answer["served_by"] == owner:
                    return user
        await asyncio.sleep(0.2)
    raise AssertionError(f"no key of {owner} with a caught-up standby on {other}")


async def test_stale_reads_answer_while_the_owner_is_dead_and_the_group_rebalances(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    bs, store = broker.bootstrap, f"users-{unique}"
    await make_topics(bs, unique)
    await produce(
        bs,
        [(store, user, {"name": user, "n": i}, EVENT_T0 + i) for i, user in enumerate(USERS)],
    )
    ports = {"a": free_port(), "b": free_port()}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    workers = Workers(bs, unique, tmp_path, app="query_app:joins")
    try:
        for name, port in ports.items():
            workers.start(name, "--query-port", str(port), "--standby-replicas", "1")
        try:
            victim = await key_owned_by(urls["b"], urls["a"], store, 60)
        except AssertionError:
            raise AssertionError(workers.logs()) from None
        expected = {"name": victim, "n": USERS.index(victim)}
        url = f"{urls['a']}/stores/{store}/keys/{victim}"
        status, answer, _ = await get(url)
        assert (status, answer.get("served_by"), answer.get("value")) == (200, urls["b"], expected)

        workers.signal("b", signal.SIGKILL)
        stale_roles: set[str] = set()
        refused: set[int] = set()
        deadline = time.monotonic() + 60
        while True:
            status, answer, _ = await get(url, stale="true")
            assert (status, answer["value"], answer["served_by"]) == (200, expected, urls["a"])
            assert isinstance(answer["lag_records"], int) and isinstance(answer["lag_ms"], int)
            stale_roles.add(answer["role"])
            status, answer, headers = await get(url)
            if status == 200:
                break
            refused.add(status)
            assert (
                headers.get("Retry-After") == "1" if status == 503 else urls["b"] in answer["error"]
            )
            assert time.monotonic() < deadline, workers.logs()
            await asyncio.sleep(0.1)
        assert (answer["value"], answer["role"], answer["lag_records"]) == (expected, "active", 0)
        assert refused and refused <= {502, 503}
        assert "standby" in stale_roles
    finally:
        workers.stop_all()
