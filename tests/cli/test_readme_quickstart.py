"""The README's "Quick start for your own app", run command by command as written there, on a
fresh embedded broker: the README cannot drift from what works.

The only change: port 9092 becomes a free port, so the test can run next to anything else
(where a command relies on the default localhost:9092, STREAMJOIN_BOOTSTRAP says the port).
`streamjoin broker` and `streamjoin worker` run until Ctrl-C (as the README says), so they run
in the background; every other command must succeed in turn.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow]

README = Path(__file__).resolve().parents[2] / "README.md"
LONG_RUNNING = ("streamjoin broker", "streamjoin worker")


def quick_start() -> str:
    text = README.read_text()
    start = text.index("## Quick start for your own app\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, re.M | re.S)


def commands(section: str) -> list[str]:
    lines = [line for block in blocks(section, "bash") for line in block.splitlines()]
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"the broker did not listen on {port}")


def masked(output: str) -> list[str]:
    """Output lines with the timestamp (the time the records were sent) masked, sorted."""
    return sorted(re.sub(r"timestamp=\S+", "timestamp=T", line) for line in output.splitlines())


def test_the_quick_start_commands_work_as_written(tmp_path: Path) -> None:
    section = quick_start()
    (app,) = blocks(section, "python")
    assert app.startswith("# app.py\n")
    port = str(free_port())
    (tmp_path / "app.py").write_text(app.replace("9092", port))
    steps = [command.replace("9092", port) for command in commands(section)]
    assert [s.split()[:2] for s in steps if s.startswith(LONG_RUNNING)] == [
        ["streamjoin", "broker"],
        ["streamjoin", "worker"],
    ]
    env = {**os.environ, "STREAMJOIN_BOOTSTRAP": f"localhost:{port}"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    background: list[subprocess.Popen[bytes]] = []
    output = ""
    try:
        for step in steps:
            if step.startswith(LONG_RUNNING):
                log = open(tmp_path / f"{step.split()[1]}.log", "wb")  # noqa: SIM115
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", f"exec {step}"],
                        cwd=tmp_path,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
                if step.startswith("streamjoin broker"):
                    wait_for_port(int(port), background[-1])
                continue
            done = subprocess.run(
                ["bash", "-c", step],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            logs = "".join(p.read_text() for p in tmp_path.glob("*.log"))
            assert done.returncode == 0, f"{step}\n{done.stdout}{done.stderr}\n{logs}"
            output = done.stdout
    finally:
        for process in reversed(background):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
    (shown,) = blocks(section, "text")
    assert masked(output) == masked(shown)
