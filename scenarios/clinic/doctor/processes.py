"""What a process is, read from /proc without touching it: its command line, its name, its memory map,
the signals it handles, where it sleeps and how it ended; and, from those, a DataLoader worker by what it
runs rather than by its name.  Shared by `doctor --pid` (running.py) and `doctor --orphans` (orphans.py)."""
from __future__ import annotations

import signal
from pathlib import Path

import psutil

from scenarios.signal_masks import caught_signals


def command_of(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def comm_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


# Installed in C by the first lines of the worker loop, torch's (torch/utils/data/_utils/worker.py) and
# torchdata's StatefulDataLoader's copy alike, whatever started the worker (torch/csrc/DataLoader.cpp);
# a plain Python process has none of them.  torch's loop also names its process pt_data_worker,
# torchdata's does not: the handlers are what every worker shows, from its first second.
WORKER_SIGNALS = frozenset((signal.SIGTERM, signal.SIGBUS, signal.SIGSEGV, signal.SIGFPE))


# torchrun's elastic agent catches the same four (and SIGHUP, SIGQUIT, SIGILL, SIGABRT) and names itself so:
# it is the ranks' launcher, never a worker (read from a torchrun job's processes).
_NOT_WORKERS = ("pt_elastic",)


def runs_worker_loop(pid: int) -> bool:
    """A DataLoader worker by what it runs, not by its name: a renamed or torchdata worker too, and one whose
    worker_init_fn ignores SIGTERM (scenario 40's fix moves it from SigCgt to SigIgn)."""
    name = comm_of(pid)
    handled = caught_signals(pid) | (caught_signals(pid, "SigIgn") & {signal.SIGTERM})
    return name == "pt_data_worker" or name not in _NOT_WORKERS and WORKER_SIGNALS <= handled \
        and "torch" in maps_of(pid)


def maps_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def exit_of(pid: int) -> str:
    """How a process that is gone ended.  A zombie's wait status is the last field of
    /proc/PID/stat (exit_code, Linux 3.5+); once its parent has reaped it, nothing says."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return "reaped"
    if fields[0] != "Z":
        return ""
    status = int(fields[-1])
    if status & 0x7F:
        number = status & 0x7F
        return f"killed by {signal.Signals(number).name if number in signal.valid_signals() else number}"
    return f"exited {status >> 8}"


def wchan_of(pid: int) -> str:
    try:
        found = Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return ""
    return "" if found in ("", "0") else found
