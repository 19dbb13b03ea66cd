"""The README's "Querying state", run as written there: the worker with its query options, the
`streamjoin query` and curl commands, and the QueryClient snippet.

The only changes: `app:joins` is the query tests' app (tests/runtime/e2e/query_app.py, its
table `users-<suffix>` standing for `users`), port 8081 becomes a free port.
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
from pathlib import Path
from typing import Any

import pytest

from streamjoin.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
E2E = Path(__file__).resolve().parents[1] / "runtime" / "e2e"
sys.path.insert(0, str(E2E))

from test_queries import PARTITIONS, make_topics, produce  # noqa: E402
from test_query_failover import free_port  # noqa: E402
from worker_processes import EVENT_T0  # noqa: E402


def section() -> str:
    text = README.read_text()
    start = text.index("## Querying state\n")
    return text[start : text.index("\n## ", start + 1)]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def answered(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def test_the_query_commands_work_as_written(broker: Broker, unique: str, tmp_path: Path) -> None:
    store = f"users-{unique}"
    asyncio.run(make_topics(broker.bootstrap, unique))
    value = {"name": "user-42", "n": 42}
    asyncio.run(produce(broker.bootstrap, [(store, "user-42", value, EVENT_T0)]))
    port = str(free_port())
    (tmp_path / "app.py").write_text(
        f"import os, sys\nsys.path.insert(0, {str(E2E)!r})\nfrom query_app import make_app\n"
        "joins = make_app(os.environ['STREAMJOIN_TEST_SUFFIX'], "
        "broker=os.environ['STREAMJOIN_BOOTSTRAP'])\n"
    )

    def as_here(text: str) -> str:
        text = text.replace("8081", port).replace("/stores/users/", f"/stores/{store}/")
        return text.replace(" users ", f" {store} ").replace('"users"', f'"{store}"')

    (commands,) = blocks(section(), "bash")
    steps = [as_here(line) for line in commands.splitlines() if line.strip()]
    assert steps[0].startswith("streamjoin worker app:joins --query-port")
    env = {
        **os.environ,
        "STREAMJOIN_BOOTSTRAP": broker.bootstrap,
        "STREAMJOIN_TEST_SUFFIX": unique,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            ["bash", "-c", f"exec {steps[0]}"], cwd=tmp_path, env=env, stdout=log, stderr=log
        )
    try:
        deadline = time.monotonic() + 60
        while not answered(f"http://127.0.0.1:{port}/stores/{store}/keys/user-42"):
            assert worker.poll() is None and time.monotonic() < deadline, (
                tmp_path / "worker.log"
            ).read_text()
            time.sleep(0.2)
        outputs = []
        for step in steps[1:]:
            done = subprocess.run(
                ["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, f"{step}\n{done.stdout}{done.stderr}"
            outputs.append(done.stdout)
        text, as_json, curl_key, curl_stores = outputs
        assert text.startswith(f"{store} user-42 = {json.dumps(value)}\n")
        for answer in (json.loads(as_json), json.loads(curl_key)):
            assert (answer["value"], answer["role"], answer["lag_records"]) == (value, "active", 0)
        assert len(json.loads(curl_stores)["stores"][0]["tasks"]) == PARTITIONS

        (snippet,) = blocks(section(), "python")
        code = "async def main():\n" + textwrap.indent(as_here(snippet), "    ")
        code += "    return answer\n"
        scope: dict[str, Any] = {}
        exec(code, scope)
        assert asyncio.run(scope["main"]())["value"] == value
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
