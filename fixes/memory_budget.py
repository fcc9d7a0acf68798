"""Fit a DataLoader's memory in flight into a RAM budget, and measure what it really used.
Fixes scenario 10 (prefetch memory); builds on `fixes/shm_budget.py` (scenario 04).

A loader with workers holds more than the batch the loop is using.  Every
worker has `prefetch_factor` batches requested ahead; each finished batch waits
in shared memory (/dev/shm) until the loop takes it; and each worker process
carries its own private memory: the pages it copied from the parent on write
as it started, and the samples of the batch it is collating.  So

    peak  ~  (num_workers x prefetch_factor + 3) x batch      # in /dev/shm
           +  num_workers x (worker_overhead + batch)          # private to the workers

    plan = plan_for_memory(dataset, batch_size, budget_mb=2048, num_workers=8, prefetch_factor=4)
    print(plan)
    loader = DataLoader(dataset, batch_size=batch_size, **plan.loader_kwargs())

`plan_for_memory` measures one real batch (through `plan_for_shm`, which also
keeps the batches within the free /dev/shm) and lowers first `prefetch_factor`,
then `num_workers`, until the predicted peak fits the budget; if nothing fits
it raises `MemoryBudgetError`, whose message names the figures and the remedies.
`LoaderMemoryWatch` measures the real peak, to check the prediction in your loop.
In a container, /dev/shm is charged to the same memory limit as the processes:
a budget must count both, and this module does.
"""
from __future__ import annotations

import dataclasses
import os
import threading

from fixes.shm_budget import MIB, batches_in_flight, plan_for_shm

# What a forked worker copies on write as it starts (interpreter and torch pages
# it touches): 13 to 16 MB measured with torch 2.13, Python 3.11 on Linux.
# Rounded up so that the prediction is an upper bound.
WORKER_OVERHEAD_MB = 20


class MemoryBudgetError(RuntimeError):
    """Not even one worker with one prefetched batch fits the memory budget."""


def predicted_peak_bytes(batch_bytes: int, num_workers: int, prefetch_factor: int,
                         worker_overhead_mb: float = WORKER_OVERHEAD_MB) -> int:
    """Memory a loader adds to the training process at its peak (see the module docstring)."""
    # One batch more than shm_budget's count: measured here for a moment (a sample
    # of 20 ms caught it), a worker starts its next batch before the loop drops the old.
    in_shm = (batches_in_flight(num_workers, prefetch_factor) + 1) * batch_bytes
    in_workers = num_workers * (int(worker_overhead_mb * MIB) + batch_bytes)
    return in_shm + in_workers


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    num_workers: int
    prefetch_factor: int
    batch_bytes: int
    budget_bytes: int
    requested_workers: int
    requested_prefetch: int
    worker_overhead_mb: float = WORKER_OVERHEAD_MB

    @property
    def predicted_bytes(self) -> int:
        return predicted_peak_bytes(self.batch_bytes, self.num_workers, self.prefetch_factor,
                                    self.worker_overhead_mb)

    def loader_kwargs(self) -> dict:
        return {"num_workers": self.num_workers, "prefetch_factor": self.prefetch_factor}

    def __str__(self) -> str:
        asked = predicted_peak_bytes(self.batch_bytes, self.requested_workers,
                                     self.requested_prefetch, self.worker_overhead_mb)
        changed = (self.num_workers, self.prefetch_factor) != (self.requested_workers, self.requested_prefetch)
        return (f"memory budget: {self.num_workers} workers x prefetch_factor {self.prefetch_factor}"
                f" = {self.predicted_bytes / MIB:.0f} MiB predicted ({self.batch_bytes / MIB:.2f} MiB"
                f" per batch), budget {self.budget_bytes / MIB:.0f} MiB"
                + (f"; asked for {self.requested_workers} x {self.requested_prefetch}"
                   f" = {asked / MIB:.0f} MiB" if changed else ""))


def plan_for_memory(dataset, batch_size: int, budget_mb: float, num_workers: int,
                    prefetch_factor: int = 2, collate_fn=None, usable_fraction: float = 0.9,
                    worker_overhead_mb: float = WORKER_OVERHEAD_MB, sample_indices=None) -> MemoryPlan:
    """The largest settings, at most those asked for (and within the free /dev/shm),
    whose predicted peak fits `usable_fraction` of `budget_mb`.

    `budget_mb` is what the loader may add to the training process: the memory
    limit of the job minus what the model and the loop need.  Raises
    MemoryBudgetError when nothing fits (and ShmBudgetError from plan_for_shm
    when /dev/shm cannot hold even one worker's batches).
    """
    shm = plan_for_shm(dataset, batch_size, num_workers, prefetch_factor, collate_fn=collate_fn,
                       usable_fraction=usable_fraction, sample_indices=sample_indices)
    batch, budget = shm.batch_bytes, int(budget_mb * MIB)
    plan = dict(batch_bytes=batch, budget_bytes=budget, requested_workers=num_workers,
                requested_prefetch=prefetch_factor, worker_overhead_mb=worker_overhead_mb)
    # As in plan_for_shm: a deeper prefetch rarely buys speed, so it goes before workers do.
    for workers in range(shm.num_workers, 0, -1):
        for prefetch in range(prefetch_factor, 0, -1):
            fits_shm = batches_in_flight(workers, prefetch) * batch <= shm.free_bytes * usable_fraction
            predicted = predicted_peak_bytes(batch, workers, prefetch, worker_overhead_mb)
            if fits_shm and predicted <= budget * usable_fraction:
                return MemoryPlan(workers, prefetch, **plan)
    least = predicted_peak_bytes(shm.batch_bytes, 1, 1, worker_overhead_mb)
    raise MemoryBudgetError(
        f"batches of {shm.batch_bytes / MIB:.1f} MiB do not fit a {budget_mb:g} MiB budget: even 1 "
        f"worker with prefetch_factor=1 is predicted at {least / MIB:.0f} MiB ({batches_in_flight(1, 1) + 1} "
        f"batches in /dev/shm + the worker's own {worker_overhead_mb:g} MiB and one batch being "
        f"collated; {usable_fraction:.0%} of the budget is usable). Remedies: a smaller batch_size, "
        f"num_workers=0 (the loop builds each batch itself and holds only that one), or a larger "
        f"memory limit for the job (docker run --memory, resources.limits.memory in Kubernetes).")


# ---------------------------------------------------------------- measuring it


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
    """(private bytes of the process and its children, /dev/shm bytes they hold,
    private bytes per child).  A tensor in /dev/shm counts once, whoever maps it."""
    pid = pid or os.getpid()
    private, per_child, shm = 0, {}, {}
    for member in [pid, *_children(pid)]:
        try:
            size = _proc_private_bytes(member)
            _proc_shm_files(member, shm)
        except (FileNotFoundError, ProcessLookupError):  # a worker that just exited
            continue
        private += size
        if member != pid:
            per_child[member] = size
    return private, sum(shm.values()), per_child


def _children(pid: int) -> list[int]:
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                kids.extend(int(child) for child in listing.read().split())
        except FileNotFoundError:
            continue
    return kids


class LoaderMemoryWatch:
    """Samples `loader_memory_bytes()` from a background thread.  Create it before
    `iter(loader)` forks the workers: its first sample is the baseline, and
    `stop()` returns the peak growth over it, in bytes: what the loader added."""

    def __init__(self, interval_s: float = 0.02):
        if not os.path.exists("/proc/self/smaps_rollup"):
            raise RuntimeError("LoaderMemoryWatch reads /proc (Linux only); elsewhere sample "
                               "psutil's uss of the process and its children yourself")
        self.interval_s = interval_s
        private, shm, _ = loader_memory_bytes()
        self.baseline_bytes = private + shm
        self.peak_bytes = self.baseline_bytes
        self.peak_shm_bytes = shm
        self.peak_worker_bytes = 0  # the largest private memory of any one worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="LoaderMemoryWatch", daemon=True)
        self._thread.start()

    def sample(self) -> None:
        private, shm, per_child = loader_memory_bytes()
        self.peak_bytes = max(self.peak_bytes, private + shm)
        self.peak_shm_bytes = max(self.peak_shm_bytes, shm)
        self.peak_worker_bytes = max(self.peak_worker_bytes, *per_child.values(), 0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_bytes - self.baseline_bytes
