"""A restore loads a store's changelog with RocksDB's compactions held until it ends.

A changelog holds keys from the whole key range in every stretch of it, so every memtable a
restore flushes overlaps every other one, and level compaction during the restore rewrote the
data over and over: 1 GB of window state wrote 2.1 GB and took 5 us of CPU per record, against
1.6 us to read the changelog (the restore ran at 40% of a raw read of it, on 2 cores). Held
until the end, the level-0 files pile up and are compacted once, on RocksDB's own threads,
while the task runs. Meanwhile the write-stall triggers stay raised (RocksDB's advice for bulk
loads): at its defaults RocksDB delays every write from 20 level-0 files and stops them from 36,
which would hold the worker's event loop for the whole compaction. They return to the store's
own values once level 0 is small again, also for a store reopened with such a pile.

Reads must not meet the pile, though: every file of it spans every key, so a read seeks in each
one (3 ms a key at 1 GB of window state, against 0.05 once compacted; the first joins after a
10 GB restore stalled the event loop for minutes). So a restored task, and the global tables at
start-up, wait for that compaction (`until_compacted`), a few seconds a GB on RocksDB's threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from rocksdict import Rdict

__all__ = ("BulkLoad", "piled", "until_compacted")

logger = logging.getLogger(__name__)

STALL_OPTIONS = (
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
)
RAISED = {
    "level0_slowdown_writes_trigger": str(1 << 30),
    "level0_stop_writes_trigger": str(1 << 30),
    "soft_pending_compaction_bytes_limit": "0",  # 0: no limit
    "hard_pending_compaction_bytes_limit": "0",
}
COMPACTIONS = "disable_auto_compactions"
COMPACTION_TRIGGER = "level0_file_num_compaction_trigger"
SETTLED_SHARE = 2
"""Stall triggers return once level 0 has fewer files than the slowdown trigger / this."""
COMPACTION_POLL_S = 0.1
"""How often `until_compacted` looks at the stores' level 0."""


class BulkLoad:
    """One store's database: compactions held during a restore, stalls held off after it."""

    def __init__(self, db: Rdict, path: Path) -> None:
        self._db = db
        self._own = own_options(path)
        """The store's options as opened (its setter's, or RocksDB's defaults)."""
        self.loading = False
        self._raised = False
        if self._level0_files() >= self._settled_below():
            self._raise()

    def begin(self) -> None:
        """Unlogged restore writes follow: compact nothing until `end`. Not if the store's
        own stall triggers are unknown: held compactions under them would stop every write
        from 36 level-0 files on, for good."""
        if not self.loading and self._known():
            self.loading = True
            self._raise()
            self._db.set_options({COMPACTIONS: "true"})

    def end(self) -> None:
        """The restore is complete: compact the pile on RocksDB's threads."""
        if self.loading:
            self.loading = False
            self._db.set_options({COMPACTIONS: self._own.get(COMPACTIONS, "false")})

    def settle(self) -> None:
        """Back to the store's own stall triggers once level 0 is small (at checkpoints)."""
        if self._raised and not self.loading and self._level0_files() < self._settled_below():
            self._db.set_options({name: self._own[name] for name in STALL_OPTIONS})
            self._raised = False

    def pile(self) -> int:
        """Level-0 files of a restore that RocksDB is compacting, if enough to slow reads down;
        else 0 (also while the restore goes on, or if the store's own options never compact)."""
        if self.loading or self._own.get(COMPACTIONS, "false") == "true":
            return 0
        files = self._level0_files()
        trigger = int(self._own.get(COMPACTION_TRIGGER, "4"))
        return files if files >= max(self._settled_below(), trigger + 1) else 0

    def _known(self) -> bool:
        return all(name in self._own for name in STALL_OPTIONS)

    def _raise(self) -> None:
        if not self._raised and self._known():
            self._db.set_options(RAISED)
            self._raised = True

    def _level0_files(self) -> int:
        return self._db.property_int_value("rocksdb.num-files-at-level0") or 0

    def _settled_below(self) -> int:
        return int(self._own.get(STALL_OPTIONS[0], "20")) // SETTLED_SHARE


class Piled(Protocol):
    def level0_pile(self) -> int: ...


def piled(stores: Iterable[Piled]) -> bool:
    """Whether a store's restore left a pile of level-0 files that reads would meet."""
    return any(store.level0_pile() for store in stores)


async def until_compacted(what: str, stores: Mapping[str, Piled]) -> None:
    """Return once RocksDB has compacted the piles of level-0 files that restores left in
    `stores`, saying that `what` waits (reads through them would stall) and for how long."""
    piles = {name: files for name, store in stores.items() if (files := store.level0_pile())}
    if not piles:
        return
    started = time.monotonic()
    logger.info(
        "%s: waiting for RocksDB to compact the level-0 files the restore wrote (%s) before "
        "reading them: reads through them would stall the worker",
        what,
        ", ".join(f"{files} of {name}" for name, files in piles.items()),
    )
    while piled(stores.values()):  # noqa: ASYNC110 - RocksDB tells no one
        await asyncio.sleep(COMPACTION_POLL_S)
    logger.info("%s: compacted in %.1fs", what, time.monotonic() - started)


def own_options(path: Path) -> dict[str, str]:
    """The default column family's options RocksDB recorded when it opened the database (its
    newest OPTIONS file): those that `BulkLoad` changes and must put back."""
    files = sorted(path.glob("OPTIONS-*"), key=lambda file: file.name.partition("-")[2].zfill(20))
    if not files:
        return {}
    wanted = {*STALL_OPTIONS, COMPACTIONS, COMPACTION_TRIGGER}
    found: dict[str, str] = {}
    section = ""
    for line in files[-1].read_text(errors="replace").splitlines():
        text = line.strip()
        if text.startswith("["):
            section = text
        elif section == '[CFOptions "default"]':
            name, _, value = text.partition("=")
            if name in wanted:
                found[name] = value
    return found
