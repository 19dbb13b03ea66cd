"""`streamjoin worker --processes N`: the command line side of the supervisor.

Parses N, and builds the children's command line from the options the user gave (as the
command's parser read them, so every option of `worker` passes through, however it was
spelled), minus those the supervisor handles itself: `--processes`, `--metrics-port`,
`--metrics-host` and `--advertised-metrics-url` (one endpoint for the host, whose URL every
child advertises), `--create-topics` (done once, before the children start) and `--instance-id`
(each child gets `<id>-<index>`: static members must differ).
"""

from __future__ import annotations

import asyncio
import enum
import os
from pathlib import Path

import typer

from streamjoin.cli import fail
from streamjoin.runtime.process.identity import process_id
from streamjoin.runtime.process.supervisor import Supervisor
from streamjoin.state.dir_lock import holding_state_dir

__all__ = ("parse_processes", "run_supervised_workers")

_HANDLED_HERE = frozenset(
    {
        "processes",
        "metrics_port",
        "metrics_host",
        "advertised_metrics_url",
        "create_topics",
        "instance_id",
    }
)
_METRICS_DIR = ".metrics"
"""Under `<state_dir>/<app_id>`, where the processes' metrics meet (a dot: not a task's)."""


def parse_processes(value: str) -> int:
    """`N` (1 or more) or `auto`: the cores this process may run on."""
    if value == "auto":
        return len(os.sched_getaffinity(0))
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        fail(f"--processes {value}: give a number of processes (1 or more) or auto")
    return count


def run_supervised_workers(
    context: typer.Context,
    processes: int,
    *,
    state_dir: Path,
    app_id: str,
    metrics_port: int | None,
    metrics_host: str,
    advertised_metrics_url: str | None,
    instance_id: str | None,
) -> int:
    """Run `processes` workers under a supervisor, which holds the state directory for them;
    returns the exit status."""
    with holding_state_dir(state_dir, app_id):
        process_id(state_dir / app_id)  # created once, before the children read it
        supervisor = Supervisor(
            _child_args(context),
            processes,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            metrics_dir=state_dir / app_id / _METRICS_DIR,
            instance_id=instance_id,
            advertised_metrics_url=advertised_metrics_url,
        )
        return asyncio.run(supervisor.run())


def _child_args(context: typer.Context) -> list[str]:
    args: list[str] = []
    for param in context.command.params:
        name = param.name
        if name is None or name in _HANDLED_HERE:
            continue
        source = context.get_parameter_source(name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = context.params[name]
        if param.param_type_name == "argument":
            args.append(_text(value))
        elif getattr(param, "is_flag", False):
            secondary = getattr(param, "secondary_opts", [])
            args.append(param.opts[0] if value else secondary[0])
        else:
            for item in value if param.multiple else [value]:
                args += [param.opts[0], _text(item)]
    return args


def _text(value: object) -> str:
    return str(value.value) if isinstance(value, enum.Enum) else str(value)
