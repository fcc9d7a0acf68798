"""Which processes are a loader's, read from /proc: its workers (below a fork server too), the
helper processes that are not workers, and whether a process is exiting or still running.
Linux only; the memory and CPU instruments beside this file count the processes it names.
"""
from __future__ import annotations

import os
from pathlib import Path

import psutil

# Processes a loader starts that are not its workers: torch's shared-memory manager (the
# file_system strategy), and multiprocessing's fork server and resource tracker (started by
# forkserver, Python 3.14's default on Linux, and by spawn).  A forkserver loader's workers
# are the fork server's children, not the training process's.
_FORK_SERVER = "multiprocessing.forkserver"
_HELPER_MARKS = ("torch_shm_manager", _FORK_SERVER, "multiprocessing.resource_tracker")


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def helper_kind(pid: int) -> str | None:
    """Which helper process `pid` is ("torch_shm_manager", "multiprocessing.forkserver",
    "multiprocessing.resource_tracker"), or None for a worker or a process that is gone."""
    kind = next((mark for mark in _HELPER_MARKS if mark in _command(pid)), None)
    if kind == _FORK_SERVER:  # its workers are forked from it, command line and all
        try:
            if _FORK_SERVER in _command(psutil.Process(pid).ppid()):
                return None
        except psutil.Error:
            return None
    return kind


def worker_pids(pid: int | None = None) -> list[int]:
    """The loader workers of process `pid` (default: this one): its children, the fork
    server's children in its place, and no helper process."""
    workers = []
    for child in _children(pid or os.getpid()):
        kind = helper_kind(child)
        if kind == _FORK_SERVER:
            workers.extend(c for c in _children(child) if helper_kind(c) is None)
        elif kind is None:
            workers.append(child)
    return workers


def _children(pid: int) -> list[int]:
    kids = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone
        return kids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                kids.extend(int(child) for child in listing.read().split())
        except FileNotFoundError:
            continue
    return kids


_PF_EXITING = 0x4  # a process's flag from the moment it starts to exit (linux/sched.h)


def is_exiting(pid: int) -> bool:
    """True for a process that is exiting, a zombie, or gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            flags = int(stat.read().rsplit(")", 1)[1].split()[6])
    except (FileNotFoundError, ProcessLookupError):
        return True
    return bool(flags & _PF_EXITING)


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; it only waits to be reaped
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
