"""Bench part 2: memory in flight (scenarios 04 and 10).

fixes/memory_in_flight.py's predicted peak against the measured one, over workers x
prefetch_factor x batch size.  The prediction uses the worker's own memory as the fix measures
it (`measure_worker_overhead_mb`: one real worker, started just before the cell's loader), not
the fix's fixed WORKER_OVERHEAD_MB.  The planner is a safe bound, not an estimator: its goal
is never to under-predict, and to stay within PLANNER_LOOSEST of the measured peak where the
batches in flight are at least half the prediction (elsewhere the worker's own memory, measured
with a margin, dominates, and a looser bound is the price of never being under).
"""
from __future__ import annotations

import itertools
import time

import torch
from torch.utils.data import DataLoader, Dataset, default_collate

from scenarios.instruments import MIB, LoaderMemoryWatch

PLANNER_LOOSEST = 1.25  # predicted / measured, where the batches in flight dominate
FILL_S = 1.0  # the first step's wait: time for the workers to fill every prefetch slot, on a busy machine too
STEP_S = 0.04  # every other training step


class Crops(Dataset):
    """Scenario 10's samples: a decoded 128x128 RGB crop as float32 (192 KiB) and a label."""

    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.full((3, 128, 128), index / self.count), torch.tensor(index % 10)


def measure_cell(workers: int, prefetch: int, batch_size: int, steps: int) -> dict:
    """Plan one loader as a user would (one batch's bytes, one worker's own memory), then run
    it and measure what it added at its peak: main + workers + /dev/shm."""
    from fixes.memory_in_flight import (batch_nbytes, batches_in_flight, measure_worker_overhead_mb,
                                        predicted_peak_bytes)

    dataset = Crops(steps * batch_size)
    batch = batch_nbytes(default_collate([dataset[i] for i in range(batch_size)]))
    overhead_mb = measure_worker_overhead_mb(dataset, multiprocessing_context="fork")
    predicted = predicted_peak_bytes(batch, workers, prefetch, worker_overhead_mb=overhead_mb)
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, prefetch_factor=prefetch,
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch()
    for step, _ in enumerate(loader):
        time.sleep(FILL_S if step == 0 else STEP_S)  # the training step
    measured = watch.stop()
    return {"workers": workers, "prefetch_factor": prefetch, "batch_size": batch_size,
            "batch_mb": round(batch / MIB, 2), "worker_overhead_mb": overhead_mb,
            "predicted_mb": round(predicted / MIB, 1), "measured_mb": round(measured / MIB, 1),
            "in_flight_share": round(batches_in_flight(workers, prefetch) * batch / predicted, 3),
            "shm_batches": round(watch.peak_shm_bytes / batch, 2),
            "ratio": round(predicted / measured, 3)}


def measure_in_flight(grid, steps: int) -> list[dict]:
    return [measure_cell(*cell, steps) for cell in itertools.product(*grid)]


def under_predicted(cell: dict) -> bool:
    return cell["ratio"] < 1.0


def too_loose(cell: dict) -> bool:
    """More than PLANNER_LOOSEST over the measured peak where the batches in flight are at
    least half the prediction."""
    return cell["in_flight_share"] >= 0.5 and cell["ratio"] > PLANNER_LOOSEST
