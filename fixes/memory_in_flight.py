"""Size a DataLoader's batches in flight: num_workers and prefetch_factor that fit the free
/dev/shm and, if you give one, a memory budget.
Fixes scenario 04 (/dev/shm exhaustion: "unable to allocate shared memory ... No space left
on device", or a loop that waits forever) and scenario 10 (prefetched batches blow the job's
memory limit, and the OOM killer ends it).

    plan = plan_in_flight(dataset, batch_size, num_workers=8, prefetch_factor=4,
                          memory_budget_mb=2048)      # leave it out to check /dev/shm only
    print(plan)                                        # the figures behind the choice
    loader = DataLoader(dataset, batch_size=batch_size, **plan.loader_kwargs())

`plan_in_flight` collates one real batch in this process, counts its bytes as shared memory
stores them, and lowers first `prefetch_factor`, then `num_workers`, until the batches in
flight fit `usable_fraction` of the free /dev/shm and the predicted peak fits the budget.
When not even one worker with one prefetched batch fits, it raises `InFlightBudgetError`,
whose message names the figures and the remedies.

NOTE [ Batches in flight ], read in torch 2.13's `_MultiProcessingDataLoaderIter`
(torch/utils/data/dataloader.py: `_reset`, `_next_data`, `_try_put_index`, `_process_data`,
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/utils/data/dataloader.py#L1274-L1276
and https://github.com/pytorch/pytorch/blob/v2.13.0/torch/utils/data/dataloader.py#L1468-L1568):
- Starting an epoch, `_reset` sends num_workers x prefetch_factor index lists, and
  `_try_put_index` refuses to have more outstanding.
- A new index list is sent only from `_process_data`, when a batch is handed to the loop
  in order.  A batch that arrives early is parked in `_task_info` and sends nothing.  So
  the batches asked for and not yet handed over (queued, being collated, waiting in the
  pipe, or parked) are never more than num_workers x prefetch_factor.
- Each of them can hold a batch's bytes in /dev/shm: in a worker, `default_collate` builds
  the batch directly in shared memory (`collate_tensor_fn`, torch/utils/data/_utils/collate.py),
  and a custom collate_fn's batch moves there as the worker sends it.
- Two more are alive while `__next__` returns: the batch it hands over, and the previous one,
  which the loop's variables hold until the new one replaces it.
Hence `batches_in_flight = num_workers x prefetch_factor + 2`.  Scenario 10's
`measure_grid.py` checks the count against a measurement.

In memory, each worker adds its own: the pages it copied from the parent on write as it
started, and the separate samples of the batch it is collating (about one batch).  In a
container, /dev/shm pages are charged to the same memory limit as the processes, so

    peak  ~  batches_in_flight x batch  +  num_workers x (worker_overhead + batch)

`pin_memory=True` adds a pinned copy of the batch being handed over; it is not counted here.

worker_overhead depends on the training process: a worker copies the pages of the parent's
heap it touches, so a parent that built large Python structures before forking pays more per
worker.  WORKER_OVERHEAD_MB is a fixed upper bound for a small parent; for a tighter bound,
`measure_worker_overhead_mb(dataset)` starts one real worker and reads what it adds (Linux),
and its figure goes to `plan_in_flight(..., worker_overhead_mb=...)`.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, default_collate

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MIB = 2**20
# What a forked worker copies on write as it starts (the interpreter's and torch's pages it
# touches), with torch 2.13 and Python 3.11 on Linux, rounded up so that the prediction
# stays an upper bound (scenario 10's measure_grid.py measures it).
WORKER_OVERHEAD_MB = 20


def _anon_pss_bytes(pid) -> int:
    """Anonymous memory of a process, pages shared with others divided among them: summed over
    a parent and its forked workers, each page counts once (Linux >= 5.0)."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        return next(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss_Anon:"))


def _loader_anon_bytes() -> int:
    """This process's anonymous memory and its children's (the loader's workers)."""
    children = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as listed:
                children += listed.read().split()
        except FileNotFoundError:  # a thread that ended meanwhile has no children to list
            continue
    total = _anon_pss_bytes("self")
    for child in children:
        try:
            total += _anon_pss_bytes(child)
        except (FileNotFoundError, ProcessLookupError, StopIteration):  # exited meanwhile
            continue
    return total


def measure_worker_overhead_mb(dataset, collate_fn=None, multiprocessing_context=None,
                               batches: int = 4, margin_mb: float = 5) -> float:
    """What one forked worker adds to this process, in MiB: start a one-worker loader on
    batches of one sample and read, after each batch, the anonymous memory of this process
    and its workers over what this process had before.  The largest reading, rounded up to a
    whole MiB, plus `margin_mb` for what one reading misses: readings of one setup differ by
    about 1 MiB, and a loader with larger batches or deeper prefetch holds a little more (the
    bench, scenarios/clinic/bench/in_flight.py, saw up to 3.7 MiB beyond the reading).  It
    includes a batch of one sample and the loader's own structures, so it bounds the worker's
    own part.
    Linux only (reads /proc).  Call it where you will build the loader: what a worker copies
    depends on this process's heap."""
    if not os.path.exists("/proc/self/smaps_rollup"):
        raise OSError("measure_worker_overhead_mb reads /proc (Linux only); "
                      f"elsewhere use worker_overhead_mb={WORKER_OVERHEAD_MB}")
    loader = DataLoader(dataset, batch_size=1, num_workers=1, prefetch_factor=1, collate_fn=collate_fn,
                        sampler=range(min(batches, len(dataset))), multiprocessing_context=multiprocessing_context)
    before, largest = _loader_anon_bytes(), 0
    for _ in loader:  # the worker is alive while the loop runs: each reading includes it
        largest = max(largest, _loader_anon_bytes() - before)
    return float(math.ceil(largest / MIB) + margin_mb)


class InFlightBudgetError(RuntimeError):
    """Not even one worker with one prefetched batch fits the free /dev/shm or the budget."""


def batch_nbytes(batch) -> int:
    """Bytes a collated batch takes in /dev/shm: each tensor is its own file, so each is
    rounded up to whole pages.  Walks tuples, lists and dicts."""
    if isinstance(batch, torch.Tensor):
        return -(-batch.untyped_storage().nbytes() // PAGE) * PAGE
    if isinstance(batch, np.ndarray):  # default_collate turns these into tensors; a custom one may not
        return -(-batch.nbytes // PAGE) * PAGE
    if isinstance(batch, Mapping):
        return sum(batch_nbytes(value) for value in batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(batch_nbytes(item) for item in batch)
    return 0  # ints, strings…: pickled through the pipe, not shared memory


def batches_in_flight(num_workers: int, prefetch_factor: int) -> int:
    """Batches a loader can hold at once: the ones asked for and not yet handed over, the
    one being handed over and the one the loop still holds (see NOTE [ Batches in flight ])."""
    return num_workers * prefetch_factor + 2


def predicted_peak_bytes(batch_bytes: int, num_workers: int, prefetch_factor: int,
                         worker_overhead_mb: float = WORKER_OVERHEAD_MB) -> int:
    """Memory a loader adds to the training job at its peak: its batches in /dev/shm
    and each worker's own (see the module docstring)."""
    in_shm = batches_in_flight(num_workers, prefetch_factor) * batch_bytes
    return in_shm + num_workers * (int(worker_overhead_mb * MIB) + batch_bytes)


def shm_free_bytes(shm_dir: str = "/dev/shm") -> int:
    stats = os.statvfs(shm_dir)
    return stats.f_bavail * stats.f_frsize


@dataclasses.dataclass(frozen=True)
class InFlightPlan:
    num_workers: int
    prefetch_factor: int
    batch_bytes: int
    free_shm_bytes: int
    requested: tuple  # (num_workers, prefetch_factor) asked for
    budget_bytes: int | None = None  # None: only /dev/shm is checked
    worker_overhead_mb: float = WORKER_OVERHEAD_MB
    shm_dir: str = "/dev/shm"

    @property
    def batches(self) -> int:
        return batches_in_flight(self.num_workers, self.prefetch_factor)

    @property
    def shm_bytes(self) -> int:
        return self.batches * self.batch_bytes

    @property
    def predicted_bytes(self) -> int:
        return predicted_peak_bytes(self.batch_bytes, self.num_workers, self.prefetch_factor,
                                    self.worker_overhead_mb)

    def loader_kwargs(self) -> dict:
        return {"num_workers": self.num_workers, "prefetch_factor": self.prefetch_factor}

    def __str__(self) -> str:
        line = (f"in flight: {self.num_workers} workers x prefetch_factor {self.prefetch_factor} + 2"
                f" = {self.batches} batches of {self.batch_bytes / MIB:.2f} MiB"
                f" = {self.shm_bytes / MIB:.1f} MiB in {self.shm_dir} ({self.free_shm_bytes / MIB:.1f} MiB free)")
        if self.budget_bytes is not None:
            line += (f", {self.predicted_bytes / MIB:.0f} MiB predicted with the workers' own"
                     f" (budget {self.budget_bytes / MIB:.0f} MiB)")
        if self.requested != (self.num_workers, self.prefetch_factor):
            asked = dataclasses.replace(self, num_workers=self.requested[0], prefetch_factor=self.requested[1])
            line += (f"; asked for {asked.num_workers} x {asked.prefetch_factor} = {asked.batches} batches, "
                     + (f"{asked.predicted_bytes / MIB:.0f} MiB predicted" if self.budget_bytes is not None
                        else f"{asked.shm_bytes / MIB:.1f} MiB"))
        return line


def plan_in_flight(dataset, batch_size: int, num_workers: int, prefetch_factor: int = 2, *,
                   memory_budget_mb: float | None = None, collate_fn=None, shm_dir: str = "/dev/shm",
                   usable_fraction: float = 0.9, worker_overhead_mb: float = WORKER_OVERHEAD_MB,
                   sample_indices=None) -> InFlightPlan:
    """The largest settings, at most those asked for, whose batches in flight fit
    `usable_fraction` of the free `shm_dir` and whose predicted peak fits that fraction
    of `memory_budget_mb` (what the loader may add: the job's memory limit minus what the
    model and the loop need; None checks /dev/shm only).

    One batch is collated here from `sample_indices` (default: the first `batch_size`
    items), through `collate_fn` if you use one; pass the indices of your largest samples
    when sizes vary.  Raises InFlightBudgetError when nothing fits.
    """
    if num_workers < 1 or prefetch_factor < 1:
        raise ValueError("plan_in_flight is for loaders with workers: num_workers and prefetch_factor "
                         "must be at least 1 (num_workers=0 holds one batch, in no shared memory)")
    if isinstance(dataset, IterableDataset):
        raise TypeError("plan_in_flight measures a batch by index; for an IterableDataset, collate one "
                        "batch yourself and compare batches_in_flight() x batch_nbytes(batch) with "
                        "shm_free_bytes() and your budget")
    indices = list(range(min(batch_size, len(dataset)))) if sample_indices is None else list(sample_indices)
    batch = (collate_fn or default_collate)([dataset[i] for i in indices])
    budget = None if memory_budget_mb is None else int(memory_budget_mb * MIB)
    first = InFlightPlan(num_workers, prefetch_factor, batch_nbytes(batch), shm_free_bytes(shm_dir),
                         (num_workers, prefetch_factor), budget, worker_overhead_mb, shm_dir)
    # A prefetch deeper than a batch or two per worker rarely speeds up a loader whose workers
    # keep up, so prefetch_factor goes first, and workers only after it.
    for workers in range(num_workers, 0, -1):
        for prefetch in range(prefetch_factor, 0, -1):
            plan = dataclasses.replace(first, num_workers=workers, prefetch_factor=prefetch)
            if not _over(plan, usable_fraction):
                return plan
    over = _over(dataclasses.replace(first, num_workers=1, prefetch_factor=1), usable_fraction)
    raise InFlightBudgetError("; and ".join(over.values()) + ". Remedies: "
                              + " ".join(_REMEDIES[limit] for limit in over)
                              + " Or use a smaller batch_size, or num_workers=0, which holds one batch"
                              " and no shared memory.")


_REMEDIES = {
    "shm": "give the container more shared memory (docker run --shm-size=1g, or --ipc=host; "
           "in Kubernetes an emptyDir with medium: Memory on /dev/shm).",
    "memory": "give the job a larger memory limit (docker run --memory, resources.limits.memory "
              "in Kubernetes).",
}


def _over(plan: InFlightPlan, usable_fraction: float) -> dict:
    """What `plan` exceeds ("shm", "memory"), each with a sentence for a refusal."""
    found = {}
    if plan.shm_bytes > plan.free_shm_bytes * usable_fraction:
        found["shm"] = (
            f"batches of {plan.batch_bytes / MIB:.1f} MiB do not fit in {plan.shm_dir}: even 1 worker with "
            f"prefetch_factor=1 keeps {plan.batches} batches = {plan.shm_bytes / MIB:.1f} MiB in shared "
            f"memory, and {plan.free_shm_bytes / MIB:.1f} MiB is free ({usable_fraction:.0%} usable)")
    if plan.budget_bytes is not None and plan.predicted_bytes > plan.budget_bytes * usable_fraction:
        found["memory"] = (
            f"batches of {plan.batch_bytes / MIB:.1f} MiB do not fit a {plan.budget_bytes / MIB:.0f} MiB "
            f"memory budget: even 1 worker with prefetch_factor=1 is predicted at "
            f"{plan.predicted_bytes / MIB:.0f} MiB ({plan.batches} batches in flight, and the worker's own "
            f"{plan.worker_overhead_mb:g} MiB and the samples it collates; {usable_fraction:.0%} of the "
            f"budget usable)")
    return found
