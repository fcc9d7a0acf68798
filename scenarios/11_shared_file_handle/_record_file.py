"""Scenario 11's data, imported by its scripts: one file of fixed-size records, and their checksums.

The records are random bytes, so a record read from the wrong offset can never
pass for the right one: its CRC-32 tells them apart.  Like many record formats
the file ends with an index (here the CRC-32 table), so a read that a racing
worker pushed past the last record still returns a full record's worth of
(wrong) bytes instead of a short read.
"""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np

from scenarios.host import cannot_run

RECORD_BYTES = 4096  # one page: each record a page of its own on disk
_NO_PAGE_CACHE = {"tmpfs", "ramfs", "devtmpfs"}  # files there live in memory only


def write_records(path: Path, count: int, seed: int = 0) -> np.ndarray:
    """Write `count` records and their CRC-32 table to `path`, flushed to disk;
    return the CRC-32s."""
    rng = np.random.default_rng(seed)
    checksums = np.empty(count, dtype=np.uint32)
    with open(path, "wb") as out:
        for start in range(0, count, 1000):
            chunk = rng.integers(0, 256, size=(min(1000, count - start), RECORD_BYTES), dtype=np.uint8)
            checksums[start:start + len(chunk)] = [zlib.crc32(row) for row in chunk]
            out.write(chunk.tobytes())
        out.write(checksums.tobytes())  # the footer: the index of checksums
        out.flush()
        os.fsync(out.fileno())  # dirty pages cannot be dropped from the cache
    return checksums


def _filesystem_type(path: Path) -> str:
    """The type of the file system `path` is on, from the longest matching mount point."""
    target, best, kind = path.resolve(), None, "?"
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mount_point, fs_type, *_ = line.split()
        mount = Path(mount_point)
        if (mount == target or mount in target.parents) and (best is None or len(mount.parts) >= len(best.parts)):
            best, kind = mount, fs_type
    return kind


def evict_from_page_cache(path: Path) -> None:
    """Make the next reads of `path` go to the disk, as they do for a data set
    larger than RAM, on first touch, or on network storage.  Needs no root:
    posix_fadvise(DONTNEED) drops this file's clean pages only."""
    kind = _filesystem_type(path.parent)
    if not hasattr(os, "posix_fadvise") or kind in _NO_PAGE_CACHE:
        cannot_run(f"{path.parent} is on {kind}, whose files cannot be evicted from memory; "
                   "point TMPDIR at a disk-backed folder (e.g. TMPDIR=$HOME/tmp)")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
