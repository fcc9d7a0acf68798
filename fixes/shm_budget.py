"""Fit a DataLoader's batches in flight into the free space of /dev/shm.
Fixes scenario 04 (/dev/shm exhaustion).

A DataLoader worker hands each batch to the training process through shared
memory: one file per tensor in /dev/shm (a tmpfs).  Up to `num_workers x
prefetch_factor` batches wait there, and the batch the loop is using, and the
one arriving while it still holds the old one, stay there too.  A container
gets a small tmpfs (Docker's default `--shm-size` is 64 MB), so settings that
are fine on a workstation run out of space inside one.

    plan = plan_for_shm(dataset, batch_size, num_workers=8, prefetch_factor=4)
    print(plan)                                    # the figures behind the choice
    loader = DataLoader(dataset, batch_size=batch_size, **plan.loader_kwargs())

`plan_for_shm` measures one real batch (collated in this process), compares
the bytes in flight with the free space of /dev/shm, and lowers first
`prefetch_factor`, then `num_workers`, until they fit; if not even one worker
with one batch prefetched fits, it raises `ShmBudgetError`, whose message names
the numbers and the remedies.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.data import IterableDataset, default_collate

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MIB = 2**20


class ShmBudgetError(RuntimeError):
    """Not even one worker's batches fit in the free shared memory."""


def batch_nbytes(batch) -> int:
    """Bytes a collated batch takes in /dev/shm: each tensor is its own file,
    so each is rounded up to whole pages.  Walks tuples, lists and dicts."""
    if isinstance(batch, torch.Tensor):
        size = batch.untyped_storage().nbytes()
        return -(-size // PAGE) * PAGE
    if isinstance(batch, np.ndarray):  # default_collate turns these into tensors; a custom one may not
        return -(-batch.nbytes // PAGE) * PAGE
    if isinstance(batch, Mapping):
        return sum(batch_nbytes(value) for value in batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(batch_nbytes(item) for item in batch)
    return 0  # ints, strings…: pickled through the pipe, not shared memory


def batches_in_flight(num_workers: int, prefetch_factor: int) -> int:
    """Batches that can hold shared memory at once: every worker's prefetched
    ones, the one the loop holds, and the next, which arrives before the loop
    lets go of the previous one."""
    return num_workers * prefetch_factor + 2


def shm_free_bytes(shm_dir: str = "/dev/shm") -> int:
    stats = os.statvfs(shm_dir)
    return stats.f_bavail * stats.f_frsize


@dataclasses.dataclass(frozen=True)
class ShmPlan:
    num_workers: int
    prefetch_factor: int
    batch_bytes: int
    free_bytes: int
    requested_workers: int
    requested_prefetch: int
    shm_dir: str = "/dev/shm"

    @property
    def in_flight_bytes(self) -> int:
        return batches_in_flight(self.num_workers, self.prefetch_factor) * self.batch_bytes

    def loader_kwargs(self) -> dict:
        return {"num_workers": self.num_workers, "prefetch_factor": self.prefetch_factor}

    def __str__(self) -> str:
        asked = batches_in_flight(self.requested_workers, self.requested_prefetch) * self.batch_bytes
        changed = (self.num_workers, self.prefetch_factor) != (self.requested_workers, self.requested_prefetch)
        return (f"shm budget: {self.num_workers} workers x prefetch_factor {self.prefetch_factor}"
                f" = {self.in_flight_bytes / MIB:.1f} MiB in flight"
                f" ({self.batch_bytes / MIB:.2f} MiB per batch), {self.free_bytes / MIB:.1f} MiB free"
                f" in {self.shm_dir}"
                + (f"; asked for {self.requested_workers} x {self.requested_prefetch}"
                   f" = {asked / MIB:.1f} MiB" if changed else ""))


def plan_for_shm(dataset, batch_size: int, num_workers: int, prefetch_factor: int = 2,
                 collate_fn=None, shm_dir: str = "/dev/shm", usable_fraction: float = 0.9,
                 sample_indices=None) -> ShmPlan:
    """The largest settings, at most those asked for, whose batches fit in `shm_dir`.

    One batch is collated here from `sample_indices` (default: the first
    `batch_size` items); pass the indices of your largest samples when sizes
    vary.  `usable_fraction` leaves room for everything else that uses
    /dev/shm.  Raises ShmBudgetError when nothing fits.
    """
    if num_workers < 1 or prefetch_factor < 1:
        raise ValueError("plan_for_shm is for loaders with workers: num_workers and "
                         "prefetch_factor must be at least 1 (num_workers=0 uses no shared memory)")
    if isinstance(dataset, IterableDataset):
        raise TypeError("plan_for_shm measures a batch by index; for an IterableDataset, collate "
                        "one batch yourself and pass its batch_nbytes() to a check of your own")
    indices = list(range(min(batch_size, len(dataset)))) if sample_indices is None else list(sample_indices)
    batch = (collate_fn or default_collate)([dataset[i] for i in indices])
    batch_bytes = batch_nbytes(batch)
    free = shm_free_bytes(shm_dir)
    budget = free * usable_fraction
    plan = dict(batch_bytes=batch_bytes, free_bytes=free, requested_workers=num_workers,
                requested_prefetch=prefetch_factor, shm_dir=shm_dir)
    # Prefetching deeper than one batch per worker rarely speeds up a loader whose
    # workers keep up, so prefetch_factor goes first and workers only after it.
    for workers in range(num_workers, 0, -1):
        for prefetch in range(prefetch_factor, 0, -1):
            if batches_in_flight(workers, prefetch) * batch_bytes <= budget:
                return ShmPlan(workers, prefetch, **plan)
    least = batches_in_flight(1, 1) * batch_bytes
    raise ShmBudgetError(
        f"batches of {batch_bytes / MIB:.1f} MiB do not fit in {shm_dir}: even 1 worker with "
        f"prefetch_factor=1 keeps {batches_in_flight(1, 1)} batches = {least / MIB:.1f} MiB in "
        f"shared memory, and {free / MIB:.1f} MiB is free ({usable_fraction:.0%} usable). "
        f"Remedies: give the container more shared memory (docker run --shm-size=1g, or "
        f"--ipc=host; in Kubernetes an emptyDir with medium: Memory on /dev/shm), use a smaller "
        f"batch_size, or num_workers=0, which needs no shared memory.")
