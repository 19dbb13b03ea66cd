"""A streamjoin container stopped while it starts stops at once, as Compose's scale-in and
`down` stop it (SIGTERM, then SIGKILL after the grace period).

A container's first process is PID 1 of its PID namespace, and the kernel ignores a signal sent
to that process unless it has a handler for it. The worker handles SIGTERM (finish the batch,
commit, leave the group) only once it has started; a SIGTERM that comes while it imports and
loads its app was lost, and the worker ran on until Docker killed it 30 s later, without its
final commit or leaving the group: its successors repeated its output since its last commit (a
docker-e2e scale-in took 31 s and left 155 duplicates). The compose services run under Docker's
init (`init: true`), which passes SIGTERM on to the worker. Here the service's command runs as
Docker runs it, in a PID namespace of its own (`unshare`), under the init Docker uses
(`docker-init`) when the service asks for one.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker" / "docker-compose.yml"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("docker-init") is None,
    reason="needs root, unshare and Docker's init (docker-init): a container's PID 1 emulated",
)


def _closed_port() -> int:
    """A loopback port nothing listens on: the worker, if it ran on, would find no broker."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_docker_runs_it(service: str, tmp_path: Path) -> tuple[list[str], Path]:
    """The service's first process and its working directory, on this host: its command under
    Docker's init when the service asks for one; the broker and state directory local."""
    spec = yaml.safe_load(COMPOSE.read_text())["services"][service]
    command = list(spec["command"])
    command[command.index("--bootstrap") + 1] = f"127.0.0.1:{_closed_port()}"
    command[command.index("--state-dir") + 1] = str(tmp_path / "state")
    workdir = ROOT / Path(spec["working_dir"]).relative_to("/app")
    return (["docker-init", "--", *command] if spec.get("init") else command), workdir


def _first_process(unshare: subprocess.Popen[bytes], program: str) -> int:
    """The host pid of PID 1 in unshare's namespace (its one child), once it runs `program`
    and, if that is an init, once the init has started its child: before, a signal to PID 1
    is dropped (before the exec, a copy of unshare has no handler; the init sets its handlers
    up before it starts the child). Sent earlier, the test flaked."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = _children(unshare.pid)
        if found and _runs(found[0], program) and (program != "docker-init" or _children(found[0])):
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"unshare started no {program}")


def _children(pid: int) -> list[int]:
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


def _runs(pid: int, program: str) -> bool:
    """Whether the process has exec'd `program` (a script: its interpreter, then the script)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
    except OSError:
        return False
    return program in (Path(arg.decode()).name for arg in argv)


def test_a_worker_stopped_while_it_starts_stops_at_once(tmp_path: Path) -> None:
    command, workdir = _as_docker_runs_it("worker", tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        container = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child", *command],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        os.kill(_first_process(container, command[0]), signal.SIGTERM)  # as `docker stop`
        container.wait(120)
    finally:
        container.kill()
        container.wait()
    said = log.read_text(errors="replace")
    # Killed by the SIGTERM (the init exits 128 + 15 when its child was): not run on until it
    # found no broker, which is what a worker does that never saw it.
    assert container.returncode in (-signal.SIGTERM, 128 + signal.SIGTERM), said
    assert "kafka at" not in said, said
