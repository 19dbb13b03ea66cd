"""Merge the Prometheus text of several processes into one, each sample labelled by process.

The worker processes of a host (`streamjoin worker --processes N`) serve their metrics on
loopback; the supervisor serves one endpoint with all of them. Each family keeps its HELP and
TYPE once, followed by every process's samples with `process="<index>"` added, so a sum over
processes is one PromQL `sum without (process)`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ("merge_expositions",)


def merge_expositions(texts: Mapping[str, str], label: str = "process") -> str:
    """`texts`: process -> its exposition (text format 0.0.4, as MetricsRegistry renders)."""
    headers: dict[str, dict[str, str]] = {}
    samples: dict[str, list[str]] = {}
    for process, text in texts.items():
        family = ""
        for line in text.splitlines():
            parts = line.split(" ", 3)
            if line.startswith("# ") and len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                family = parts[2]
                headers.setdefault(family, {}).setdefault(parts[1], line)
                continue
            if not line.strip() or line.startswith("#"):
                continue
            name_end = min(i for i in (line.find("{"), line.find(" ")) if i >= 0)
            if not family or not line.startswith(family):
                family = line[:name_end]
                headers.setdefault(family, {})
            samples.setdefault(family, []).append(_labelled(line, name_end, label, process))
    lines: list[str] = []
    for family, header in headers.items():
        lines += [header[kind] for kind in ("HELP", "TYPE") if kind in header]
        lines += samples.get(family, [])
    return "\n".join(lines) + "\n"


def _labelled(line: str, name_end: int, label: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    if line[name_end] == "{":
        rest = line[name_end + 1 :]
        sep = "" if rest.startswith("}") else ","
        return f'{line[:name_end]}{{{label}="{escaped}"{sep}{rest}'
    return f'{line[:name_end]}{{{label}="{escaped}"}}{line[name_end:]}'
