"""What a run leaves in /dev/shm: torch's shared-memory files and POSIX semaphores, found and removed.

A run takes `shm_names()` before it starts and, once every process of it is reaped, gives
`remove_leaked_shm` what it saw: whatever the run left is removed and named, never left behind,
and what runs side by side made stays theirs.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

SHM = Path("/dev/shm")  # a test points this at a folder of its own: files planted here, runs beside it would take


def shm_names() -> set[str]:
    """/dev/shm's entries now: taken before a run, for remove_leaked_shm after it."""
    return {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()


def semaphore_inodes(pids=None) -> set[int]:
    """Inodes of the POSIX semaphores these processes (default: all) have mapped.  sem_open maps
    a file of /dev/shm into each process that uses it; /proc/PID/maps may show it under glibc's
    temporary name (sem.XXXXXX (deleted)), never to be matched by name, so the inode tells."""
    inodes = set()
    for maps in [Path(f"/proc/{pid}/maps") for pid in pids] if pids is not None else Path("/proc").glob("[0-9]*/maps"):
        try:
            inodes |= {int(line.split()[4]) for line in maps.read_text().splitlines() if "/dev/shm/sem." in line}
        except (OSError, ValueError, IndexError):
            continue
    return inodes


def _stat(name: str) -> os.stat_result | None:
    try:
        return os.stat(SHM / name)
    except OSError:
        return None


def _inode(name: str) -> int | None:
    return getattr(_stat(name), "st_ino", None)


# glibc's sem_open makes a semaphore under a temporary name (sem.XXXXXX), maps it, links it to its real
# name and unlinks the temporary within microseconds: one still there seconds later, mapped by nobody, is a
# creation a SIGKILL cut short (seen once in a suite run that SIGKILLs jobs at epoch ends).  One younger may
# be another run's creation in flight (runs side by side make queues while this one ends): it is waited out.
GLIBC_TEMPORARY, TEMPORARY_AGE_S = re.compile(r"sem\.[A-Za-z0-9]{6}"), 2.0


def _temporaries(names: set[str]) -> list[str]:
    """The glibc temporaries among these names that are still there TEMPORARY_AGE_S after they were made."""
    made = {n: stat.st_mtime for n in names if GLIBC_TEMPORARY.fullmatch(n) and (stat := _stat(n))}
    time.sleep(max([0.0] + [TEMPORARY_AGE_S - (time.time() - at) for at in made.values()]))
    return [n for n in made if _stat(n)]


def remove_leaked_shm(before: set[str], seen, ours: set[int] = frozenset()) -> list[str]:
    """Remove what a run left in /dev/shm and name it: a leak is reported, and never left behind.
    torch's files are named torch_<creator pid>_…: those of processes outside this run stay, so
    runs side by side never take each other's.  multiprocessing's semaphores (sem.mp-…, left when
    a SIGKILL stops the resource tracker's clean-up) carry no pid: `ours` are the inodes the run's
    processes mapped when it ended; one of them still there and mapped by nobody is a leak."""
    from scenarios.instruments import shm_file_creator

    new = shm_names() - before
    leaked = sorted(n for n in new if n.startswith("torch_") and shm_file_creator(n) in (None, *seen))
    semaphores = [n for n in new if n.startswith("sem.") and _inode(n) in ours]
    # A glibc temporary names no pid and no process maps it: which run's SIGKILL left it cannot be told
    # (runs side by side kill theirs too), so it is removed, and reported as no run's leak.
    abandoned = _temporaries(new)
    if semaphores or abandoned:
        mapped = semaphore_inodes()
        leaked += sorted(n for n in semaphores if _inode(n) not in mapped)
        abandoned = [n for n in abandoned if _inode(n) not in mapped]
    for name in leaked + abandoned:
        (SHM / name).unlink(missing_ok=True)
    return leaked
