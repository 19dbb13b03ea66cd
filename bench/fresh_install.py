"""A fresh install as a user makes it, measured: `pip install '.[broker]'` (the embedded broker's
extra; no PySpark) of this tree into a new venv, once without a C compiler (CC=/nonexistent:
setup.py goes on as pure Python) and once compiled; for each, the venv's size, what setup.py
said, that PySpark is absent, and how the per-record path runs. Then the README's quick start on
the pure install: the embedded broker, the app, a worker (its line saying how it runs), two
orders and two payments, the two joined records read back.

    python bench/fresh_install.py [--variants pure,compiled] [--keep DIR]

Needs PyPI (pip's cache helps); a few minutes per variant on 2 cores (mypyc type-checks the
compiled modules before the compiler is tried).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streamjoin.broker.base import free_port

ROOT = Path(__file__).resolve().parents[1]
_CONSTRAINED = ["-c", "constraints.txt", ".[broker]"]
_COMPILERS = {"pure": {"CC": "/nonexistent/cc"}, "compiled": {}}


def copy_tree(destination: Path) -> Path:
    """The tree's files as git sees them (tracked or new, not ignored): no build left-overs."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def megabytes(directory: Path) -> float:
    """Disk used, as `du` counts it."""
    blocks = sum(
        (Path(root) / name).lstat().st_blocks
        for root, _, names in os.walk(directory)
        for name in names
    )
    return blocks * 512 / 1e6


def install(work: Path, variant: str) -> Path:
    source = copy_tree(work / f"src-{variant}")
    venv = work / f"venv-{variant}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    started = time.monotonic()
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-v", "--progress-bar", "off", *_CONSTRAINED],
        cwd=source,
        env={**os.environ, **_COMPILERS[variant]},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"{variant}: pip install failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    said = sorted(set(re.findall(r"^\s*(streamjoin: .*)$", done.stdout + done.stderr, re.M)))
    described = subprocess.run(
        [str(python), "-c", "from streamjoin.compiled import build_description as d; print(d())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
    ).stdout.strip()
    has_spark = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print(u.find_spec('pyspark') is not None)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(
        f"{variant}: venv {megabytes(venv):.0f} MB, installed in {time.monotonic() - started:.0f} s"
    )
    print(f"  pyspark installed: {has_spark}; per-record path: {described}")
    for line in said:
        print(f"  setup.py: {line[:300]}")
    return venv


def _app(readme: str, bootstrap: str) -> str:
    block = readme.split("```python\n# app.py\n", 1)[1].split("```", 1)[0]
    return block.replace("localhost:9092", bootstrap)


def _readme_commands(readme: str, after: str) -> list[str]:
    block = readme.split(after, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def _until_listening(port: int, within_s: float = 120) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.2)
    sys.exit(f"no broker on port {port} after {within_s:.0f} s")


def quick_start(venv: Path, work: Path) -> None:
    """The README's quick start, its commands as typed (the tools read STREAMJOIN_BOOTSTRAP,
    the app names the broker), against a broker on a free port instead of 9092."""
    readme = (ROOT / "README.md").read_text().split("## Quick start for your own app", 1)[1]
    port = free_port("127.0.0.1")
    bootstrap = f"127.0.0.1:{port}"
    app_dir = work / "quick-start"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(_app(readme, bootstrap))
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    env.update(STREAMJOIN_BOOTSTRAP=bootstrap, VIRTUAL_ENV=str(venv))

    def start(command: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                command.split(), cwd=app_dir, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def run(command: str) -> str:
        done = subprocess.run(
            command, shell=True, cwd=app_dir, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            sys.exit(f"{command!r} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    (broker_command,) = _readme_commands(readme, "start the embedded broker")
    topics, worker_command = _readme_commands(readme, "create the topics and start a worker")
    *sends, consume = _readme_commands(readme, "then read the joined output")
    broker = start(broker_command.replace("9092", str(port)), work / "broker.log")
    worker = None
    try:
        _until_listening(port)
        run(topics)
        worker = start(worker_command, work / "worker.log")
        for command in sends:
            run(command)
        joined = run(consume.replace("--max 2", "--max 2 --timeout 120")).splitlines()
        said = [
            line.split(": ", 1)[-1]  # after the logger's name
            for line in (work / "worker.log").read_text().splitlines()
            if "per-record path" in line
        ]
        print(f"quick start on the pure install: the worker says {said}")
        print(f"  joined records read back: {len(joined)}")
        for line in joined:
            print(f"    ...{line[-80:]}")
    finally:
        for process in (worker, broker):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(60)


def main(args: argparse.Namespace) -> None:
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="streamjoin-install-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load: {os.getloadavg()[0]:.1f} (figures under load are indicative)")
    try:
        venvs = {variant: install(work, variant) for variant in args.variants.split(",")}
        if "pure" in venvs:
            quick_start(venvs["pure"], work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", default="pure,compiled")
    parser.add_argument("--keep", metavar="DIR", help="work here and keep the venvs")
    main(parser.parse_args())
