"""A container engine for `make docker-e2e`: Docker with Compose v2, started when none runs.

Where the engine is missing and can be had (root on Debian, as on the project's machines):
Debian's `docker.io`, and Compose v2 from Debian trixie's `docker-compose` package (bookworm's
is Compose v1, which the compose file's `depends_on` conditions need v2 for), fetched with
`apt-get download` through a source list and package lists of its own under
~/.cache/streamjoin/ (the system's apt configuration is left alone) and kept there for the next
run; then `dockerd` is started in the background (there is no systemd) and stopped at the end.
Everything comes from Debian's package archive. When no engine can be had, `EngineUnavailable`
says why in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ("Engine", "EngineUnavailable", "start_engine")

_TRIXIE = "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {mirror} trixie main\n"
_MIRROR = "http://deb.debian.org/debian"
_DAEMON_READY_S = 90.0


class EngineUnavailable(Exception):
    """No container engine can be found or started here; the message says why."""


@dataclass
class Engine:
    """A Docker engine answering on its socket; `daemon` is the dockerd this run started."""

    daemon: subprocess.Popen[bytes] | None

    def stop(self) -> None:
        """Stop the dockerd this run started (none: leave the engine as it was found)."""
        if self.daemon is None or self.daemon.poll() is not None:
            return
        self.daemon.terminate()
        try:
            self.daemon.wait(60)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            self.daemon.wait()


def _run(*command: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def _compose_major() -> int | None:
    """The major version of `docker compose`, None without the plugin."""
    if shutil.which("docker") is None:
        return None
    shown = _run("docker", "compose", "version", "--short")
    if shown.returncode != 0:
        return None
    return int(shown.stdout.strip().lstrip("v").split(".")[0])


def _installable() -> str | None:
    """Why packages cannot be installed here, or None if they can."""
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        return "this is not a Debian system (no apt-get)"
    if os.geteuid() != 0:
        return "installing Debian's docker.io needs root"
    return None


def _apt_install(*packages: str) -> None:
    print(f"installing {' '.join(packages)} from Debian's packages")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise EngineUnavailable(f"{' '.join(command)} failed: {lines[-1] if lines else '?'}")


def _compose_v2_deb(cache: Path) -> Path:
    """Debian trixie's docker-compose package (Compose v2), downloaded once into `cache`."""
    found = sorted(cache.glob("docker-compose_2.*_amd64.deb"))
    if found:
        return found[-1]
    lists = cache / "apt-trixie"
    empty = lists / "none"
    for directory in (lists / "lists" / "partial", lists / "cache" / "archives" / "partial", empty):
        directory.mkdir(parents=True, exist_ok=True)
    (lists / "sources.list").write_text(_TRIXIE.format(mirror=_MIRROR))
    options = [
        f"-o=Dir::Etc::SourceList={lists / 'sources.list'}",
        f"-o=Dir::Etc::SourceParts={empty}",
        f"-o=Dir::State::Lists={lists / 'lists'}",
        f"-o=Dir::Cache={lists / 'cache'}",
        "-o=Dir::Etc::Preferences=/dev/null",
        f"-o=Dir::Etc::PreferencesParts={empty}",
        "-o=APT::Sandbox::User=root",
    ]
    print("fetching Compose v2 (Debian trixie's docker-compose package)")
    for command in (
        ["apt-get", *options, "update", "-qq"],
        ["apt-get", *options, "download", "docker-compose"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, cwd=cache, check=False)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise EngineUnavailable(f"{' '.join(command[:1] + command[-2:])}: {lines[-1]}")
    found = sorted(cache.glob("docker-compose_2.*_amd64.deb"))
    if not found:
        raise EngineUnavailable("Debian trixie's docker-compose package is not Compose v2")
    return found[-1]


def _start_daemon(log: Path) -> subprocess.Popen[bytes]:
    if shutil.which("dockerd") is None:
        raise EngineUnavailable("no dockerd to start")
    print(f"starting dockerd (its log: {log})")
    with log.open("ab") as out:
        daemon = subprocess.Popen(
            ["dockerd"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + _DAEMON_READY_S
    while _run("docker", "info", timeout=30).returncode != 0:
        if daemon.poll() is not None:
            lines = log.read_text(errors="replace").strip().splitlines()
            raise EngineUnavailable(f"dockerd exited ({lines[-1] if lines else 'no output'})")
        if time.monotonic() > deadline:
            daemon.kill()
            raise EngineUnavailable(f"dockerd did not answer within {_DAEMON_READY_S:g} s")
        time.sleep(0.5)
    return daemon


def start_engine(cache: Path) -> Engine:
    """A running Docker engine with Compose v2: the one found, or one installed and started;
    raises EngineUnavailable saying why there is none."""
    try:
        return _start_engine(cache)
    except (OSError, subprocess.SubprocessError) as exc:
        raise EngineUnavailable(f"{type(exc).__name__}: {exc}") from exc


def _start_engine(cache: Path) -> Engine:
    cache.mkdir(parents=True, exist_ok=True)
    if shutil.which("dockerd") is None and shutil.which("docker") is None:
        reason = _installable()
        if reason is not None:
            raise EngineUnavailable(f"no Docker here, and {reason}")
        _apt_install("docker.io")
    if (_compose_major() or 0) < 2:
        reason = _installable()
        if reason is not None:
            raise EngineUnavailable(f"no Docker Compose v2 here, and {reason}")
        if shutil.which("docker") is None:
            _apt_install("docker.io")
        deb = _compose_v2_deb(cache)
        done = _run("dpkg", "-i", str(deb))
        if done.returncode != 0 or (_compose_major() or 0) < 2:
            raise EngineUnavailable(f"installing {deb.name} failed: {done.stderr.strip()[-200:]}")
    if _run("docker", "info", timeout=30).returncode == 0:
        return Engine(daemon=None)
    if os.geteuid() != 0:
        raise EngineUnavailable("the Docker engine is not running, and starting dockerd needs root")
    return Engine(daemon=_start_daemon(cache / "dockerd.log"))
