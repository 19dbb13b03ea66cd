"""Compiles streamjoin's per-record path with mypyc, from the same typed sources.

The modules below run for every input record (decode, window stores, pending non-matches,
output assembly, partitioning). Compiled, the worker spends about 1.4x less CPU per record on
the benchmark's ad join (bench/join_throughput.py: 26 instead of 36 µs).
`STREAMJOIN_COMPILE=0` installs pure Python, and so does a machine where mypyc or the C
compiler fails (no compiler, no Python headers): the install goes on without the extensions,
saying why, and the worker says at start which way it runs (the same sources either way).

A digest of each compiled source goes to `streamjoin/_compiled.json` once the extensions are
built (never for a pure install), so that an editable install whose sources changed after the
build runs its sources instead of stale extensions (streamjoin/compiled.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "streamjoin" / "_compiled.json"

COMPILED = [
    "streamjoin/dsl/serdes.py",
    "streamjoin/kafka/partitioning.py",
    "streamjoin/runtime/joins/counters.py",
    "streamjoin/runtime/joins/foreign_key.py",
    "streamjoin/runtime/joins/global_table.py",
    "streamjoin/runtime/joins/pending.py",
    "streamjoin/runtime/joins/records.py",
    "streamjoin/runtime/joins/table.py",
    "streamjoin/runtime/joins/table_table.py",
    "streamjoin/runtime/joins/versioned_table.py",
    "streamjoin/runtime/joins/windowed.py",
    "streamjoin/runtime/output/producer_sink.py",
    "streamjoin/runtime/output/sink.py",
    "streamjoin/runtime/tasks/admission.py",
    "streamjoin/runtime/tasks/arrivals.py",
    "streamjoin/runtime/tasks/in_flight.py",
    "streamjoin/runtime/tasks/join_task.py",
    "streamjoin/runtime/tasks/lateness.py",
    "streamjoin/runtime/tasks/ordering.py",
    "streamjoin/runtime/tasks/output_writer.py",
    "streamjoin/state/stores/byte_budget.py",
    "streamjoin/state/stores/encoding.py",
    "streamjoin/state/stores/global_store.py",
    "streamjoin/state/stores/kv_store.py",
    "streamjoin/state/stores/recent_records.py",
    "streamjoin/state/stores/segments.py",
    "streamjoin/state/stores/store_base.py",
    "streamjoin/state/stores/table_values.py",
    "streamjoin/state/stores/versioned_store.py",
    "streamjoin/state/stores/window_store.py",
]


def metadata_only(argv: list[str]) -> bool:
    """Whether this run only writes the package's metadata, which pip asks for before it builds
    (`dist_info`, `egg_info`): mypyc need not run then (it took a minute under load)."""
    commands = [arg for arg in argv[1:] if not arg.startswith("-")]
    return bool(commands) and commands[0] in ("dist_info", "egg_info")


def compiled_extensions(manifest: Path = MANIFEST) -> list[object]:
    """The extensions mypyc generates (their C is compiled by `BuildCompiledOrPure`), or none."""
    if metadata_only(sys.argv):
        return []
    manifest.unlink(missing_ok=True)  # written again once the extensions are built
    if os.environ.get("STREAMJOIN_COMPILE", "1") == "0":
        return []
    # The build sees no installed packages (the same on a fresh machine, where the
    # dependencies install after it, as in a developer's venv): their types are Any to mypyc.
    # `make lint` is the type check; these flags only keep strictness about Any from
    # refusing the build.
    flags = [
        "--no-site-packages",
        "--ignore-missing-imports",
        "--no-warn-unused-ignores",
        "--no-warn-return-any",
    ]
    try:
        from mypyc.build import mypycify  # noqa: PLC0415 - needed only when compiling

        extensions: list[object] = mypycify([*flags, *COMPILED], opt_level="3")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure: install pure Python
        say_pure_python(f"mypyc failed ({type(exc).__name__}: {exc})")
        return []
    return extensions


def say_pure_python(why: str) -> None:
    print(
        f"streamjoin: {why}; installing pure Python, which runs the same code more slowly "
        "(a C compiler and Python's headers, e.g. gcc and python3-dev, make it compiled)",
        file=sys.stderr,
    )


class BuildCompiledOrPure(build_ext):
    """Builds the extensions, or leaves the package pure Python when the C compiler fails."""

    def run(self) -> None:
        inplace = bool(self.inplace or self.editable_mode)
        try:
            super().run()
        except (BaseError, CCompilerError, OSError) as exc:
            say_pure_python(f"the C compiler failed ({exc})")
            if inplace:  # an editable install: earlier extensions would shadow the sources
                self.inplace = True
                for extension in self.extensions:
                    Path(self.get_ext_fullpath(extension.name)).unlink(missing_ok=True)
            return
        digests = {
            path.removesuffix(".py").replace("/", "."): hashlib.sha256(
                (HERE / path).read_bytes()
            ).hexdigest()
            for path in COMPILED
        }
        built = MANIFEST if inplace else Path(self.build_lib) / MANIFEST.relative_to(HERE)
        built.parent.mkdir(parents=True, exist_ok=True)
        built.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import the class
    setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": BuildCompiledOrPure})
