"""The process id of a host: created once in the state directory, the same for every process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from streamjoin.runtime.process.identity import process_id, transactional_id


def test_created_once_and_kept(tmp_path: Path) -> None:
    first = process_id(tmp_path / "app")
    assert len(first) == 32
    assert process_id(tmp_path / "app") == first
    assert (tmp_path / "app" / "process.id").read_text() == first + "\n"
    assert [p.name for p in (tmp_path / "app").iterdir()] == ["process.id"]


def test_an_empty_file_gets_an_id(tmp_path: Path) -> None:
    (tmp_path / "process.id").write_text("")
    created = process_id(tmp_path)
    assert created and (tmp_path / "process.id").read_text().strip() == created


def test_processes_starting_together_agree_on_one(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from streamjoin.runtime.process.identity import process_id\n"
        "print(process_id(Path(sys.argv[1])))"
    )
    started = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "app")], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    ids = {process.communicate(timeout=60)[0].strip() for process in started}
    assert ids == {(tmp_path / "app" / "process.id").read_text().strip()}


def test_the_transactional_id_follows_the_process_and_its_member(tmp_path: Path) -> None:
    """Exactly-once: the same across restarts on one state directory, one per process of a
    host, and a static member's own instance id."""
    app_dir = tmp_path / "ads"
    host = process_id(app_dir)
    assert transactional_id("ads", app_dir) == f"ads-{host}"
    assert transactional_id("ads", app_dir, member=1) == f"ads-{host}-1"
    assert transactional_id("ads", tmp_path / "elsewhere") != f"ads-{host}"
    assert transactional_id("ads", tmp_path / "static", "worker-7") == "ads-worker-7"
    assert not (tmp_path / "static").exists()
