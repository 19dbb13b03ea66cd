"""Where a process's memory is, by allocator: `bench/worker_runner.py --memory-probe` puts it
beside the parts the worker's memory budget counts, so that what the budget misses can be
placed (issue 40, item 4) without a scratch copy of the runner.

Hand-written: psutil and tracemalloc see RSS or Python's own allocations, not glibc's heap and
separately mapped blocks beside CPython's arenas; this reads all three, Linux and glibc only.

- `rss_anon`, `rss_file`: /proc/self/status (RssAnon, RssFile).
- `glibc_heap`, `glibc_heap_free`: glibc's main and thread heaps (mallinfo2 `arena`,
  `fordblks`): RocksDB's memtables and block cache, aiokafka's fetched bytes, and Python's
  objects of over 512 bytes.
- `glibc_mapped`: blocks of 128 KiB and more glibc mapped on their own (`hblkhd`).
- `python_arenas`, `python_free`: CPython's arenas for objects of 512 bytes or less, and
  the bytes of them no object holds (free blocks, unused pools, headers), outside glibc's
  figures (`sys._debugmallocstats`: its "bytes in allocated blocks" are the rest).

`census` counts the objects the cyclic collector tracks, by type, with the bytes of the
strings, bytes and numbers each holds directly: which Python objects the budget misses. It
stalls the process about a second per million objects, so it runs on demand only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import tempfile

__all__ = ("breakdown", "census")

_LEAVES = (bytes, bytearray, str, int, float)
"""Objects the collector does not track: counted with the first tracked object holding them."""


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2() -> _MallInfo2 | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        call = libc.mallinfo2
    except (OSError, AttributeError):  # not glibc, or older than 2.33
        return None
    call.restype = _MallInfo2
    info: _MallInfo2 = call()
    return info


def _status_kib(*keys: str) -> dict[str, int]:
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in keys:
                found[key] = int(value.split()[0])
    return found


def _python_allocator() -> dict[str, int]:
    """Bytes in CPython's arenas, and in them not held by objects: `sys._debugmallocstats`
    writes them to the C-level stderr, so it is caught there."""
    with tempfile.TemporaryFile(mode="w+") as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        text = caught.read()
    found = {}
    for line in text.splitlines():
        name, _, value = line.rpartition("=")
        if "bytes/arena" in name:
            found["arenas"] = int(value.replace(",", ""))
        elif "bytes in allocated blocks" in name:
            found["used"] = int(value.replace(",", ""))
    if found.keys() != {"arenas", "used"}:
        return {}
    return {"python_arenas": found["arenas"], "python_free": found["arenas"] - found["used"]}


def breakdown() -> dict[str, int]:
    """The figures above, in bytes (those this platform cannot give are left out); a few
    ms, more as CPython's arenas grow."""
    status = _status_kib("RssAnon", "RssFile")
    figures = {
        "rss_anon": status.get("RssAnon", 0) * 1024,
        "rss_file": status.get("RssFile", 0) * 1024,
    }
    info = _mallinfo2()
    if info is not None:
        figures.update(
            glibc_heap=info.arena, glibc_heap_free=info.fordblks, glibc_mapped=info.hblkhd
        )
    figures.update(_python_allocator())
    return figures


def census(top: int = 20) -> list[dict[str, int | str]]:
    """The `top` types by bytes (their objects' own sizes, plus the leaves they hold that no
    other object counted first), with their counts. The collector's frozen objects (the
    worker freezes what survives a young collection) are counted too."""
    gc.unfreeze()
    try:
        objects = gc.get_objects()
    finally:
        gc.freeze()
    seen: set[int] = set()
    sizes: dict[str, list[int]] = {}
    for obj in objects:
        size = sys.getsizeof(obj)
        for ref in gc.get_referents(obj):
            if isinstance(ref, _LEAVES) and id(ref) not in seen:
                seen.add(id(ref))
                size += sys.getsizeof(ref)
        entry = sizes.setdefault(type(obj).__qualname__, [0, 0])
        entry[0] += 1
        entry[1] += size
    del objects
    ranked = sorted(sizes.items(), key=lambda item: item[1][1], reverse=True)[:top]
    return [{"type": name, "objects": count, "bytes": size} for name, (count, size) in ranked]
