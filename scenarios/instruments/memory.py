"""What a loader's processes hold in memory (USS per process; anonymous memory and /dev/shm of the
whole loader, each page counted once) and the watches that sample it while the loop runs.
"""
from __future__ import annotations

import os
import threading

import psutil

from scenarios.instruments.processes import is_exiting, worker_pids

MIB = 2**20


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
        if set(worker_pids()) != set(per_child) or any(map(is_exiting, per_child)):
            return
        self.peak_bytes = max(self.peak_bytes, private + shm)
        self.peak_shm_bytes = max(self.peak_shm_bytes, shm)
        self.peak_worker_bytes = max(self.peak_worker_bytes, *per_child.values(), 0)

    def stop(self) -> int:
        self._join()
        return self.peak_bytes - self.baseline_bytes


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
