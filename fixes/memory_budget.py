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
In a container, /dev/shm is charged to the same memory limit as the processes:
a budget must count both, and this module does.
"""
from __future__ import annotations

import dataclasses

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
