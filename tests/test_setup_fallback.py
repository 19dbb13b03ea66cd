"""setup.py installs pure Python when mypyc or the C compiler fails, saying why, and leaves no
extension of an earlier build to shadow the sources; with a compiler it builds the extensions
and records what it compiled. (bench/fresh_install.py does the same through pip in a new venv,
then runs a worker on the embedded broker.)"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest
from setuptools import Distribution, Extension

ROOT = Path(__file__).resolve().parents[1]

_MODULE_C = """
#include <Python.h>
static struct PyModuleDef fast = {PyModuleDef_HEAD_INIT, "fast", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_fast(void) { return PyModule_Create(&fast); }
"""


def setup_module_of_streamjoin() -> ModuleType:
    """setup.py as a module: imported, not run (it calls setup() only as __main__)."""
    spec = importlib.util.spec_from_file_location("streamjoin_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_ext(project: Path, *, inplace: bool) -> Path:
    """Run setup.py's build_ext on a one-extension package in `project`; returns the path the
    extension is (or would be) built at."""
    package = project / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "fast.c").write_text(_MODULE_C)
    distribution = Distribution(
        {
            "name": "pkg",
            "packages": ["pkg"],
            "ext_modules": [Extension("pkg.fast", ["pkg/fast.c"])],
            "cmdclass": {"build_ext": setup_module_of_streamjoin().BuildCompiledOrPure},
        }
    )
    command = distribution.get_command_obj("build_ext")
    command.inplace = inplace
    command.build_lib = str(project / "build" / "lib")
    command.build_temp = str(project / "build" / "temp")
    command.ensure_finalized()
    built = Path(command.get_ext_fullpath("pkg.fast"))
    distribution.run_command("build_ext")
    return built


def test_without_a_c_compiler_the_build_goes_on_pure_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CC", "/nonexistent/cc")
    # An editable install compiled before: its extension must not go on shadowing the source.
    stale = tmp_path / "pkg" / f"fast{sysconfig.get_config_var('EXT_SUFFIX')}"
    stale.parent.mkdir()
    stale.write_bytes(b"an extension of an earlier build")
    built = build_ext(tmp_path, inplace=True)
    assert built == stale and not stale.exists()
    err = capsys.readouterr().err
    assert "streamjoin: the C compiler failed" in err and "installing pure Python" in err
    assert not (tmp_path / "streamjoin" / "_compiled.json").exists()


def test_when_mypyc_fails_no_extension_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mypyc.build", None)  # importing it fails
    manifest = tmp_path / "_compiled.json"
    manifest.write_text("{}")
    assert setup_module_of_streamjoin().compiled_extensions(manifest) == []
    assert not manifest.exists()
    assert "streamjoin: mypyc failed (ModuleNotFoundError" in capsys.readouterr().err


@pytest.mark.skipif(
    shutil.which(str(sysconfig.get_config_var("CC") or "cc").split()[0]) is None,
    reason="needs the C compiler Python was built with",
)
def test_with_a_compiler_the_extension_is_built_and_the_build_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    built = build_ext(tmp_path, inplace=False)
    assert built.exists()
    manifest = tmp_path / "build" / "lib" / "streamjoin" / "_compiled.json"
    recorded = json.loads(manifest.read_text())
    assert "streamjoin.runtime.joins.windowed" in recorded


@pytest.mark.parametrize("command", ["dist_info", "egg_info"])
def test_asked_for_metadata_only_mypyc_does_not_run(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """pip asks setup.py for the metadata before it builds the wheel: mypyc ran twice."""
    monkeypatch.setitem(sys.modules, "mypyc.build", None)  # were mypyc run, it would say so
    manifest = tmp_path / "_compiled.json"
    manifest.write_text("{}")
    module = setup_module_of_streamjoin()
    monkeypatch.setattr(sys, "argv", ["setup.py", command, "--output-dir", str(tmp_path)])
    assert module.compiled_extensions(manifest) == []
    assert manifest.exists() and capsys.readouterr().err == ""
    monkeypatch.setattr(sys, "argv", ["setup.py", "bdist_wheel"])
    assert module.compiled_extensions(manifest) == []
    assert "streamjoin: mypyc failed" in capsys.readouterr().err
