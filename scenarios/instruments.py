"""Measuring instruments: what the scenario scripts and the runner use to *see* a failure.

Not fixes (those live in fixes/, one copyable file each): these read memory,
descriptors and /dev/shm from outside the code under test, so that a broken
script and its fixed twin are measured by the same hands.  Linux only where
they read /proc; each says so when it cannot work.
"""
from __future__ import annotations

import os
import threading
from time import time_ns
from pathlib import Path

import psutil

MIB = 2**20
SHM_DIR = Path("/dev/shm")


# ---------------------------------------------------------------- memory of processes


def process_memory_mb(proc: psutil.Process) -> tuple[float, float] | None:
    """(USS, RSS) of a process in MB, or None for one that is gone or a zombie
    (whose /proc memory files read as empty).  USS counts only the pages this
    process holds alone: what a forked worker really adds.  RSS, what `top`
    shows, also counts every page still shared with the parent."""
    try:
        info = proc.memory_full_info()
    except psutil.Error:
        return None
    if info.rss == 0:
        return None
    return getattr(info, "uss", info.rss) / MIB, info.rss / MIB


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


class WorkerMemoryWatch:
    """Call `sample()` now and then during an epoch; `growth_mb()` is the
    largest USS growth of any worker between its first and latest sample."""

    def __init__(self):
        self.first_mb: dict[int, float] = {}
        self.latest_mb: dict[int, float] = {}

    def sample(self) -> None:
        for pid in worker_pids():
            try:
                measured = process_memory_mb(psutil.Process(pid))
            except psutil.Error:
                measured = None
            if measured is None:  # the worker exited between listing and reading
                continue
            self.first_mb.setdefault(pid, measured[0])
            self.latest_mb[pid] = measured[0]

    def growth_mb(self) -> float:
        if not self.latest_mb:
            raise RuntimeError("no worker was sampled: call sample() while the loader's workers run")
        return max(self.latest_mb[pid] - self.first_mb[pid] for pid in self.latest_mb)


def _proc_private_bytes(pid: int) -> int:
    """Anonymous memory of one process, shared pages divided among the processes
    sharing them (Pss_Anon): summed over a parent and its forked workers it counts
    each page once.  File pages (libraries) are left out: they are shared with every
    other Python process on the machine and can be dropped by the kernel."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss_Anon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("this kernel's smaps_rollup has no Pss_Anon (Linux >= 5.0 needed); "
                       "measure psutil.Process().memory_full_info().pss instead")


def _proc_shm_files(pid: int, found: dict) -> None:
    """Add the /dev/shm files this process holds open or mapped, as (dev, inode) -> bytes.
    With torch's default file_descriptor strategy the files are already unlinked,
    so only the processes holding them can tell how many there are."""
    fd_dir = f"/proc/{pid}/fd"
    for name in os.listdir(fd_dir):
        try:
            if not os.readlink(f"{fd_dir}/{name}").startswith("/dev/shm/"):
                continue
            stat = os.stat(f"{fd_dir}/{name}")
        except OSError:  # closed meanwhile
            continue
        found[(stat.st_dev, stat.st_ino)] = stat.st_blocks * 512
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            if "/dev/shm/" not in line:
                continue
            span, _, _, dev, inode = line.split()[:5]
            major, minor = (int(part, 16) for part in dev.split(":"))
            start, end = (int(part, 16) for part in span.split("-"))
            found.setdefault((os.makedev(major, minor), int(inode)), end - start)


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


def _exiting(pid: int) -> bool:
    """True for a process that is exiting, a zombie, or gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            flags = int(stat.read().rsplit(")", 1)[1].split()[6])
    except (FileNotFoundError, ProcessLookupError):
        return True
    return bool(flags & _PF_EXITING)


def loader_memory_bytes(pid: int | None = None) -> tuple[int, int, dict[int, int]]:
    """(private bytes of the process and its workers, /dev/shm bytes they hold, private
    bytes per worker).  A tensor in /dev/shm counts once, whoever maps it."""
    pid = pid or os.getpid()
    private, per_child, shm = 0, {}, {}
    for member in [pid, *worker_pids(pid)]:
        try:
            size = _proc_private_bytes(member)
            _proc_shm_files(member, shm)
        except (FileNotFoundError, ProcessLookupError):  # a worker that just exited
            continue
        private += size
        if member != pid:
            per_child[member] = size
    return private, sum(shm.values()), per_child


class _Sampler:
    """Calls `self.sample()` every `interval_s` from a daemon thread until `stop()`."""

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def _join(self) -> None:
        self._stop.set()
        self._thread.join()


class LoaderMemoryWatch(_Sampler):
    """Samples `loader_memory_bytes()` from a background thread.  Create it before
    `iter(loader)` forks the workers: its first sample is the baseline, and
    `stop()` returns the peak growth over it, in bytes: what the loader added."""

    def __init__(self, interval_s: float = 0.02):
        if not os.path.exists("/proc/self/smaps_rollup"):
            raise RuntimeError("LoaderMemoryWatch reads /proc (Linux only); elsewhere sample "
                               "psutil's uss of the process and its children yourself")
        private, shm, _ = loader_memory_bytes()
        self.baseline_bytes = private + shm
        self.peak_bytes = self.baseline_bytes
        self.peak_shm_bytes = shm
        self.peak_worker_bytes = 0  # the largest private memory of any one worker
        super().__init__(interval_s)

    def sample(self) -> None:
        private, shm, per_child = loader_memory_bytes()
        # The processes are read one after another, each with its share of the pages it shares
        # with the others.  A worker that exits (or starts) between two reads leaves those pages
        # counted at two different shares: a sixth of a torch process's heap too much, about
        # 35 MiB, seen once in 10's measure_grid as its workers shut down.  Keep only samples
        # whose workers were the same, none of them exiting, before and after the reads.
        if set(worker_pids()) != set(per_child) or any(map(_exiting, per_child)):
            return
        self.peak_bytes = max(self.peak_bytes, private + shm)
        self.peak_shm_bytes = max(self.peak_shm_bytes, shm)
        self.peak_worker_bytes = max(self.peak_worker_bytes, *per_child.values(), 0)

    def stop(self) -> int:
        self._join()
        return self.peak_bytes - self.baseline_bytes


# ---------------------------------------------------------------- waiting for a CPU


def _run_delay_ns(pid: int) -> int:
    """Nanoseconds the process's threads spent runnable but not running (the second field of
    /proc/PID/task/TID/schedstat): time the machine's other work took from it."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended between the listing and the read
    return total


# Above this share, a timing measures the machine rather than the code: the grader leaves a timing
# bound unjudged (scenarios/clinic/run/judge.py) and the doctor says nothing of a rate (its check 07).
# 07's fixed.py, 5 runs each: 0.02 on a quiet machine (ratio_to_bound 0.97), 0.03-0.04 with one
# core kept busy (0.96-0.97), 0.10-0.14 with two (0.94-0.95); inside a suite run with two
# spinners 0.21 (0.907), and one such run fell to 0.894 against its bound of 0.9.
BUSY_SHARE = 0.15


class CpuWait:
    """The share of the time this process and its workers spent waiting for a CPU between
    `start()` and `share()`: near 0 on a machine with cores to spare, 0.5 where every process
    shares its core with one other.  A timing figure taken while it is high measures the
    machine, not the code; the runner then leaves that figure's bound unjudged."""

    def start(self) -> CpuWait:
        self.pids = [os.getpid(), *worker_pids()]
        self.delays = {pid: _run_delay_ns(pid) for pid in self.pids}
        self.started = time_ns()
        return self

    def share(self) -> float:
        elapsed = time_ns() - self.started
        waited = sum(max(0, _run_delay_ns(pid) - before) for pid, before in self.delays.items())
        return waited / max(1, elapsed * len(self.pids))


# ---------------------------------------------------------------- /dev/shm and descriptors


class ShmUsageWatch(_Sampler):
    """Samples the used space of /dev/shm from a background thread; `stop()`
    returns the peak in bytes.  Start it before the loader forks its workers."""

    def __init__(self, shm_dir: str = "/dev/shm", interval_s: float = 0.002):
        self.shm_dir = shm_dir
        self.peak_bytes = self._used()
        super().__init__(interval_s)

    def _used(self) -> int:
        stats = os.statvfs(self.shm_dir)
        return (stats.f_blocks - stats.f_bfree) * stats.f_frsize

    def sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._used())

    def stop(self) -> int:
        self._join()
        return max(self.peak_bytes, self._used())


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
    alive = [pid for pid in pids if _is_running(int(pid))]
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


def _is_running(pid: int) -> bool:
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
