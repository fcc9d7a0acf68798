"""The files a loader holds and leaves: the descriptors this process has open, and PyTorch's files
in /dev/shm, found by the process that made them and removed once it is gone.
"""
from __future__ import annotations

import os
from pathlib import Path

from scenarios.instruments.processes import is_running

SHM_DIR = Path("/dev/shm")


def open_fd_count() -> int:
    """How many file descriptors this process holds open now (Linux, /proc)."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        raise RuntimeError("open_fd_count() needs Linux's /proc/self/fd; on macOS use "
                           "`lsof -p <pid> | wc -l` instead")
    return len(os.listdir(fd_dir)) - 1  # listdir's own descriptor is in the listing


def shm_file_creator(name: str) -> int | None:
    """The creator's pid in a torch shared-memory file name, torch_<pid>_<random>_<counter>."""
    part = name.split("_")[1] if name.startswith("torch_") and name.count("_") >= 2 else ""
    return int(part) if part.isdigit() else None


def torch_shm_files(pids=None) -> list[Path]:
    """PyTorch's files in /dev/shm (the `file_system` strategy's, or any left behind),
    all of them, or only those created by the given processes: PyTorch names them
    `torch_<pid of the creating process>_<random>_<counter>`."""
    wanted = None if pids is None else {int(pid) for pid in pids}
    try:
        names = [p for p in SHM_DIR.iterdir() if p.name.startswith("torch_")]
    except OSError:
        return []
    return sorted(p for p in names if wanted is None or shm_file_creator(p.name) in wanted)


def remove_torch_shm_files(pids) -> list[str]:
    """Unlink the /dev/shm files that the given, dead, processes created; return their names.

    Only for processes that are gone: a file whose creator still runs may be in
    use, and its memory is returned only when the last process unmaps it anyway.
    """
    alive = [pid for pid in pids if is_running(int(pid))]
    if alive:
        raise RuntimeError(f"process(es) {', '.join(map(str, alive))} still run: stop the job "
                           "first, then remove its /dev/shm files")
    removed = []
    for path in torch_shm_files(pids) if pids else []:
        try:
            path.unlink()
        except FileNotFoundError:  # its manager removed it meanwhile
            continue
        removed.append(path.name)
    return removed
