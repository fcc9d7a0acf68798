"""Measure DataLoader workers' private memory from the training process.

Used by scenario 03 to make copy-on-read growth visible; copy it into your own
loop to diagnose the same thing.  USS ("unique set size") counts only the pages
a worker does not share with anyone; RSS, what `top` shows, also counts every
page still shared with the parent, so after `fork` each worker's RSS starts at
the parent's size and summing RSS over workers counts the shared data N times.
"""
from __future__ import annotations

import psutil


def _uss_mb(proc: psutil.Process) -> float:
    info = proc.memory_full_info()
    return getattr(info, "uss", info.rss) / 2**20  # USS exists on Linux, macOS, Windows


class WorkerMemoryWatch:
    """Call `sample()` now and then during an epoch; `growth_mb()` is the
    largest USS growth of any worker between its first and latest sample."""

    def __init__(self):
        self.first_mb: dict[int, float] = {}
        self.latest_mb: dict[int, float] = {}

    def sample(self) -> None:
        for worker in psutil.Process().children():
            try:
                uss = _uss_mb(worker)
            except psutil.Error:  # the worker exited between listing and reading
                continue
            self.first_mb.setdefault(worker.pid, uss)
            self.latest_mb[worker.pid] = uss

    def growth_mb(self) -> float:
        if not self.latest_mb:
            raise RuntimeError("no worker was sampled: call sample() while the loader's workers run")
        return max(self.latest_mb[pid] - self.first_mb[pid] for pid in self.latest_mb)
