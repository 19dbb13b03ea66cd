"""Interactive queries on two workers in this event loop: any endpoint answers for any key
(forwarding to the owner), window stores by time range, `QueryClient` going to the owner
directly, the `streamjoin query` CLI, metrics, and every error answer."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import harness
import pytest
import query_app
from aiokafka import AIOKafkaProducer
from worker_processes import EVENT_T0

import streamjoin
from streamjoin.broker import Broker
from streamjoin.kafka.partitioning import partition_for_key
from streamjoin.kafka.topics import TopicSpec, ensure_topics
from streamjoin.query.client import QueryFailed
from streamjoin.query.paths import FORWARDED_HEADER
from streamjoin.query.server import QueryServer
from streamjoin.runtime.topology.app_topology import TaskId

pytestmark = [pytest.mark.broker]

APP_DIR = Path(__file__).resolve().parent
PARTITIONS = 4
USERS = [f"user-{i}" for i in range(12)]


async def make_topics(bootstrap: str, suffix: str) -> None:
    await ensure_topics(
        bootstrap, [TopicSpec(f"{t}-{suffix}", PARTITIONS) for t in query_app.TOPICS]
    )


async def produce(bootstrap: str, records: list[tuple[str, str, dict[str, Any], int]]) -> None:
    """(topic, key, value, timestamp) each, partitioned by Kafka's default partitioner."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for topic, key, value, timestamp in records:
            await producer.send(
                topic, json.dumps(value).encode(), key=key.encode(), timestamp_ms=timestamp
            )
        await producer.flush()
    finally:
        await producer.stop()


async def get(url: str, **params: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    headers = {FORWARDED_HEADER: "1"} if params.pop("forwarded", None) else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, params=params, headers=headers) as response,
    ):
        return response.status, await response.json(), dict(response.headers)


@dataclass
class Cluster:
    workers: list[harness.Running]
    urls: list[str]
    store: str
    suffix: str

    def servers(self) -> list[QueryServer]:
        servers = [w.query_server() for w in self.workers]
        assert all(servers)
        return servers  # type: ignore[return-value]

    def owner_url(self, task: TaskId) -> str:
        index = next(i for i, w in enumerate(self.workers) if task in w.running_tasks())
        return self.urls[index]

    def user_of(self, index: int) -> tuple[str, TaskId]:
        """A user whose table task runs on worker `index`, and that task."""
        for user in USERS:
            task = table_task(user)
            if task in self.workers[index].running_tasks():
                return user, task
        raise AssertionError(f"worker {index} runs no table task")


def table_task(user: str) -> TaskId:
    return TaskId("enrich", partition_for_key(user.encode(), PARTITIONS))


@pytest.fixture(scope="module")
async def cluster(
    session_broker: Broker, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Cluster]:
    bs, suffix = session_broker.bootstrap, uuid.uuid4().hex[:10]
    tmp = tmp_path_factory.mktemp("queries")
    await make_topics(bs, suffix)
    app = query_app.make_app(suffix)
    both = [harness.Running(app, bs, tmp / name, query_port=0) for name in ("w1", "w2")]
    async with harness.workers(*both):
        for running in both:
            await running.start()
        every = {TaskId(j, p) for j in ("enrich", "attribute") for p in range(PARTITIONS)}
        cluster = Cluster(both, [], f"users-{suffix}", suffix)
        await harness.until(
            lambda: (
                both[0].running_tasks() | both[1].running_tasks() == every
                and all(w.running_tasks() for w in both)
                and all(len(s.service.placements()) == len(every) for s in cluster.servers())
            ),
            60,
            "both workers run tasks and know where every task is",
        )
        cluster.urls = [s.service.url for s in cluster.servers()]
        await produce(
            bs,
            [
                (cluster.store, user, {"name": user, "n": i}, EVENT_T0 + i)
                for i, user in enumerate(USERS)
            ]
            + [(f"imp-{suffix}", "a1", {"imp": t}, EVENT_T0 + t) for t in (0, 1_000, 2_000)],
        )
        for user in USERS:
            for _ in range(300):
                status, _, _ = await get(f"{cluster.urls[0]}/stores/{cluster.store}/keys/{user}")
                if status == 200:
                    break
                await asyncio.sleep(0.1)
        yield cluster


async def test_any_worker_answers_for_any_key_from_its_owner(cluster: Cluster) -> None:
    forwarded = 0
    for i, user in enumerate(USERS):
        task = table_task(user)
        for url in cluster.urls:
            status, answer, _ = await get(f"{url}/stores/{cluster.store}/keys/{user}")
            assert status == 200, answer
            assert answer == {
                "store": cluster.store,
                "key": user,
                "value": {"name": user, "n": i},
                "partition": task.partition,
                "served_by": cluster.owner_url(task),
                "role": "active",
                "lag_records": 0,
                "lag_ms": 0,
            }
            forwarded += url != answer["served_by"]
    assert forwarded == len(USERS)  # each key was asked of its owner and of the other one


async def test_stores_lists_kinds_partitions_and_where_each_task_runs(cluster: Cluster) -> None:
    status, listing, _ = await get(f"{cluster.urls[1]}/stores")
    assert status == 200
    kinds = {s["name"]: (s["kind"], s["partitions"]) for s in listing["stores"]}
    assert kinds == {
        cluster.store: ("table", PARTITIONS),
        "attribute-left": ("window", PARTITIONS),
        "attribute-right": ("window", PARTITIONS),
    }
    table = next(s for s in listing["stores"] if s["name"] == cluster.store)
    for task in table["tasks"]:
        assert task["active"] == cluster.owner_url(TaskId("enrich", task["partition"]))
        assert task["standby"] == []


async def test_a_window_store_answers_a_key_in_a_time_range(cluster: Cluster) -> None:
    window_url = f"{cluster.urls[1]}/stores/attribute-left/keys/a1"
    status, answer, _ = await get(window_url, **{"from": str(EVENT_T0 + 500)})
    assert status == 200, answer
    assert answer["value"] == [
        {"timestamp": EVENT_T0 + 1_000, "value": {"imp": 1_000}},
        {"timestamp": EVENT_T0 + 2_000, "value": {"imp": 2_000}},
    ]
    status, answer, _ = await get(window_url, to=str(EVENT_T0 + 999))
    assert [r["timestamp"] for r in answer["value"]] == [EVENT_T0]
    status, answer, _ = await get(window_url, to=str(EVENT_T0 - 1))
    assert (status, answer["error"]) == (404, "key 'a1' not found in store 'attribute-left'")


async def test_a_table_answers_a_key_range_from_every_partition_in_key_order(
    cluster: Cluster,
) -> None:
    url = f"{cluster.urls[0]}/stores/{cluster.store}/keys"
    status, answer, _ = await get(url, **{"from": "user-1", "to": "user-3"})
    assert status == 200, answer
    expected = sorted(u for u in USERS if "user-1" <= u < "user-3")
    assert (
        [e["key"] for e in answer["entries"]]
        == expected
        == ["user-1", "user-10", "user-11", "user-2"]
    )
    for entry in answer["entries"]:
        task = table_task(entry["key"])
        assert entry["value"] == {"name": entry["key"], "n": USERS.index(entry["key"])}
        assert (entry["partition"], entry["served_by"], entry["role"]) == (
            task.partition,
            cluster.owner_url(task),
            "active",
        )
    assert answer["truncated"] is False
    status, answer, _ = await get(url, limit="2")
    assert [e["key"] for e in answer["entries"]] == sorted(USERS)[:2]
    assert answer["truncated"] is True
    async with streamjoin.QueryClient(cluster.urls) as client:
        assert (await client.range(cluster.store, "user-1", "user-3")) == (
            await client.range(cluster.store, "user-1", "user-3", allow_stale=True)
        )
        with pytest.raises(QueryFailed, match="'attribute-left' \\(window\\) is not ordered"):
            await client.range("attribute-left")
    status, answer, _ = await get(url, limit="0")
    assert (status, answer["error"]) == (400, "limit=0: give 1 to 10000 keys")


async def test_errors_say_what_is_wrong(cluster: Cluster) -> None:
    url, store = cluster.urls[0], cluster.store
    status, answer, _ = await get(f"{url}/stores/nope/keys/x")
    assert status == 404
    assert answer["error"] == (
        f"no store named 'nope'; the stores are: attribute-left, attribute-right, {store}"
    )
    status, answer, _ = await get(f"{url}/stores/{store}/keys/user-missing")
    assert (status, answer["error"]) == (404, f"key 'user-missing' not found in store '{store}'")
    status, answer, _ = await get(f"{url}/stores/attribute-left/keys/a1", **{"from": "yesterday"})
    assert (status, answer["error"]) == (400, "from='yesterday': give a time in epoch milliseconds")
    # A member asked (as by another member) for a task it does not run: moving, retry later.
    user, task = cluster.user_of(1)
    status, answer, headers = await get(f"{url}/stores/{store}/keys/{user}", forwarded="1")
    assert status == 503
    assert headers["Retry-After"] == "1"
    assert f"task {task} of store '{store}' has no running active copy" in answer["error"]


async def test_query_client_asks_the_owner_directly_once_it_knows_it(cluster: Cluster) -> None:
    user, task = cluster.user_of(1)
    first, second = cluster.servers()
    async with streamjoin.QueryClient([cluster.urls[0]]) as client:
        answer = await client.get(cluster.store, user)
        assert answer["served_by"] == cluster.urls[1]
        served, forwarded = second.stats.served, first.stats.forwarded
        assert await client.get(cluster.store, user, allow_stale=False) == answer
        assert (second.stats.served, first.stats.forwarded) == (served + 1, forwarded)
        with pytest.raises(QueryFailed, match="not found") as failed:
            await client.get(cluster.store, "user-missing")
        assert failed.value.status == 404
        await client.stores()
        assert client.owners[cluster.store, task.partition] == cluster.urls[1]


async def test_the_query_command_prints_the_answer(cluster: Cluster) -> None:
    user, task = cluster.user_of(1)
    endpoint = cluster.urls[0].removeprefix("http://")
    env = {"STREAMJOIN_TEST_SUFFIX": cluster.suffix}
    command = ["query", "query_app:joins", cluster.store, user, "--endpoint", endpoint]
    done = await _run([*command, "--app-dir", str(APP_DIR)], env)
    assert done.returncode == 0, done.stderr
    value = {"name": user, "n": USERS.index(user)}
    assert done.stdout == (
        f"{cluster.store} {user} = {json.dumps(value)}\n"
        f"  partition {task.partition}, active copy at {cluster.urls[1]}, "
        "lag 0 records / 0 ms\n"
    )
    done = await _run([*command, "--format", "json", "--app-dir", str(APP_DIR)], env)
    assert json.loads(done.stdout)["value"] == value
    done = await _run(
        [
            "query",
            "query_app:joins",
            "nope",
            user,
            "--endpoint",
            endpoint,
            "--app-dir",
            str(APP_DIR),
        ],
        env,
    )
    assert done.returncode == 2
    assert "no store named 'nope'; the stores are:" in done.stderr
    assert "Traceback" not in done.stderr


async def test_the_query_command_answers_a_key_range_of_a_table(cluster: Cluster) -> None:
    endpoint = cluster.urls[1].removeprefix("http://")
    env = {"STREAMJOIN_TEST_SUFFIX": cluster.suffix}
    command = ["query", "query_app:joins", cluster.store, "--endpoint", endpoint]
    command += ["--app-dir", str(APP_DIR)]
    done = await _run([*command, "--from-key", "user-10", "--to-key", "user-2"], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0::2] == [
        f"{cluster.store} {user} = {json.dumps({'name': user, 'n': USERS.index(user)})}"
        for user in ("user-10", "user-11")
    ]
    task = table_task("user-10")
    assert lines[1] == (
        f"  partition {task.partition}, active copy at {cluster.owner_url(task)}, "
        "lag 0 records / 0 ms"
    )
    done = await _run([*command, "--limit", "3"], env)
    lines = done.stdout.splitlines()
    assert [line.split(" ")[1] for line in lines[0:-1:2]] == sorted(USERS)[:3]
    assert lines[-1] == "(the first 3 keys: more with a higher --limit)"


async def test_queries_are_counted_in_the_worker_metrics(cluster: Cluster) -> None:
    await get(f"{cluster.urls[0]}/stores/{cluster.store}/keys/{cluster.user_of(1)[0]}")
    metrics = cluster.workers[0].worker.metrics.render()
    assert 'streamjoin_queries_total{outcome="forwarded"}' in metrics
    assert 'streamjoin_query_latency_seconds{quantile="0.99"}' in metrics


async def test_an_unreachable_owner_answers_502_naming_it(cluster: Cluster) -> None:
    """Last: it stops the second worker's query server, then puts one that never answers in
    its place (the lookup still ends within its timeout)."""
    user, task = cluster.user_of(1)
    second = cluster.servers()[1]
    await second.stop()
    url = f"{cluster.urls[0]}/stores/{cluster.store}/keys/{user}"
    status, answer, _ = await get(url)
    assert status == 502
    assert f"the owner of task {task}, {cluster.urls[1]}, is unreachable" in answer["error"]

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the asker gives up

    silent = await asyncio.start_server(never_answer, "127.0.0.1", second.port)
    try:
        status, answer, _ = await get(url)
    finally:
        silent.close()
    assert status == 502
    assert answer["error"].endswith(f"{cluster.urls[1]}, is unreachable: no answer in time")


async def _run(arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "streamjoin", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
