"""docs/queries.md, run as written there: the worker with its query options, the
`streamjoin query` and curl commands, and the QueryClient snippet; then the commands on
versioned, foreign-key and global tables.

The only changes: `app:joins` is the query tests' app (tests/runtime/e2e/query_app.py, its
table `users-<suffix>` standing for `users`; query_tables_app.py for the other tables, each
`<table>-<suffix>`), port 8081 becomes a free port, and the page's as-of time one of the
test's prices.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

E2E = Path(__file__).resolve().parents[1] / "runtime" / "e2e"
sys.path.insert(0, str(E2E))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: docs_text

import query_tables_app  # noqa: E402
from docs_text import page  # noqa: E402
from test_queries import PARTITIONS, make_topics, produce  # noqa: E402
from test_query_failover import free_port  # noqa: E402
from worker_processes import EVENT_T0  # noqa: E402

from streamjoin.kafka.topics import TopicSpec, ensure_topics  # noqa: E402

README_AS_OF = "1767225600000"


def section() -> str:
    return page("docs/queries.md")


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def answered(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def worker(
    command: str, module: str, tmp_path: Path, env: dict[str, str], ready: list[str]
) -> Iterator[None]:
    """The page's worker command, on `module`'s app, until every `ready` URL answers."""
    (tmp_path / "app.py").write_text(
        f"import os, sys\nsys.path.insert(0, {str(E2E)!r})\nfrom {module} import make_app\n"
        "joins = make_app(os.environ['STREAMJOIN_TEST_SUFFIX'], "
        "broker=os.environ['STREAMJOIN_BOOTSTRAP'])\n"
    )
    with open(tmp_path / "worker.log", "wb") as log:
        running = subprocess.Popen(
            ["bash", "-c", f"exec {command}"], cwd=tmp_path, env=env, stdout=log, stderr=log
        )
    try:
        deadline = time.monotonic() + 60
        while not all(answered(url) for url in ready):
            assert running.poll() is None and time.monotonic() < deadline, (
                tmp_path / "worker.log"
            ).read_text()
            time.sleep(0.2)
        yield
    finally:
        running.send_signal(signal.SIGTERM)
        try:
            running.wait(60)
        except subprocess.TimeoutExpired:
            running.kill()


def user_env(broker: Broker, unique: str) -> dict[str, str]:
    return {
        **os.environ,
        "STREAMJOIN_BOOTSTRAP": broker.bootstrap,
        "STREAMJOIN_TEST_SUFFIX": unique,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }


def run_steps(steps: list[str], tmp_path: Path, env: dict[str, str]) -> list[str]:
    outputs = []
    for step in steps:
        done = subprocess.run(
            ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{step}\n{done.stdout}{done.stderr}"
        outputs.append(done.stdout)
    return outputs


def test_the_query_commands_work_as_written(broker: Broker, unique: str, tmp_path: Path) -> None:
    store = f"users-{unique}"
    asyncio.run(make_topics(broker.bootstrap, unique))
    value = {"name": "user-42", "n": 42}
    users = [("user-1", 1), ("user-2", 2), ("user-3", 3)]
    asyncio.run(
        produce(
            broker.bootstrap,
            [(store, "user-42", value, EVENT_T0)]
            + [(store, u, {"name": u, "n": n}, EVENT_T0) for u, n in users],
        )
    )
    port = str(free_port())

    def as_here(text: str) -> str:
        text = text.replace("8081", port).replace("/stores/users/", f"/stores/{store}/")
        return text.replace(" users ", f" {store} ").replace('"users"', f'"{store}"')

    commands = blocks(section(), "bash")[0]
    steps = [as_here(line) for line in commands.splitlines() if line.strip()]
    assert steps[0].startswith("streamjoin worker app:joins --query-port")
    env = user_env(broker, unique)
    ready = [
        f"http://127.0.0.1:{port}/stores/{store}/keys/{u}" for u in ("user-42", "user-1", "user-2")
    ]
    with worker(steps[0], "query_app", tmp_path, env, ready):
        text, as_json, key_range, curl_key, curl_stores = run_steps(steps[1:], tmp_path, env)
        assert text.startswith(f"{store} user-42 = {json.dumps(value)}\n")
        for answer in (json.loads(as_json), json.loads(curl_key)):
            assert (answer["value"], answer["role"], answer["lag_records"]) == (value, "active", 0)
        assert len(json.loads(curl_stores)["stores"][0]["tasks"]) == PARTITIONS
        # user-1 to user-3 (excluded): user-1, user-2 (user-42 > user-3 in text order)
        lines = key_range.splitlines()
        assert lines[0::2] == [
            f'{store} user-{n} = {{"name": "user-{n}", "n": {n}}}' for n in (1, 2)
        ]
        assert all(line.startswith("  partition ") for line in lines[1::2])

        (snippet,) = blocks(section(), "python")
        code = "async def main():\n" + textwrap.indent(as_here(snippet), "    ")
        code += "    return answer\n"
        scope: dict[str, Any] = {}
        exec(code, scope)
        assert asyncio.run(scope["main"]())["value"] == value


def test_the_table_query_commands_work_as_written(
    broker: Broker, unique: str, tmp_path: Path
) -> None:
    def name(table: str) -> str:
        return f"{table}-{unique}"

    asyncio.run(
        ensure_topics(
            broker.bootstrap,
            [TopicSpec(name(t), n) for t, n in query_tables_app.PARTITIONS.items()],
        )
    )
    as_of = EVENT_T0 + 1_500
    asyncio.run(
        produce(
            broker.bootstrap,
            [
                (name("prices"), "p1", {"price": 10}, EVENT_T0 + 1_000),
                (name("prices"), "p1", {"price": 11}, EVENT_T0 + 2_000),
                (name("customers"), "c1", {"name": "ann"}, EVENT_T0),
                (name("orders"), "o1", {"customer": "c1"}, EVENT_T0),
                (name("countries"), "fr", {"name": "France"}, EVENT_T0),
            ],
        )
    )
    port = str(free_port())

    def as_here(text: str) -> str:
        text = text.replace("8081", port).replace(README_AS_OF, str(as_of))
        for table in ("prices", "orders", "countries"):
            text = text.replace(f"/stores/{table}/", f"/stores/{name(table)}/")
            text = text.replace(f" {table} ", f" {name(table)} ")
        return text

    worker_command, tables = (
        blocks(section(), "bash")[0].splitlines()[0],
        blocks(section(), "bash")[1],
    )
    assert README_AS_OF in tables
    steps = [as_here(line) for line in tables.splitlines() if line.strip()]
    env = user_env(broker, unique)
    stores = f"http://127.0.0.1:{port}/stores"
    ready = [
        f"{stores}/{name('orders')}/keys/o1",
        f"{stores}/{name('prices')}/keys/p1?as_of={EVENT_T0 + 2_000}",
    ]
    with worker(as_here(worker_command), "query_tables_app", tmp_path, env, ready):
        curl_as_of, query_as_of, curl_order, curl_country = run_steps(steps, tmp_path, env)
    answer = json.loads(curl_as_of)
    assert (answer["value"], answer["timestamp"], answer["valid_to"]) == (
        {"price": 10},
        EVENT_T0 + 1_000,
        EVENT_T0 + 2_000,
    )
    assert query_as_of.startswith(f'{name("prices")} p1 = {{"price": 10}}\n')
    assert query_as_of.endswith(f"  valid from {EVENT_T0 + 1_000} to {EVENT_T0 + 2_000}\n")
    assert json.loads(curl_order)["value"] == {"customer": "c1"}
    answer = json.loads(curl_country)
    assert (answer["value"], answer["role"]) == ({"name": "France"}, "global")
