"""Scenario 10, fixed: the loader's settings are computed to fit the memory budget.

    python scenarios/10_prefetch_memory/fixed.py

Expect the plan line (2 workers, prefetch_factor 3 instead of 16, about
106 MiB predicted), every sample read, in the same order, and a measured peak
of about 85 MiB, within the budget of 128 MiB.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from fixes.memory_budget import MemoryBudgetError, plan_for_memory
from scenarios.instruments import MIB, LoaderMemoryWatch

IMAGES, BATCH = 2400, 32
# What the job's memory limit leaves for data loading, once the model and the
# loop have theirs: scaled down with the batches (6 MiB here).
MEMORY_BUDGET_MB = 128


class CropDataset(Dataset):
    def __len__(self):
        return IMAGES

    def __getitem__(self, index):
        # A decoded, augmented 128x128 RGB crop as float32: 192 KiB, 6 MiB a batch.
        return torch.full((3, 128, 128), index / IMAGES), torch.tensor(index % 10)


def main():
    dataset = CropDataset()
    # FIX: predict the memory in flight from one real batch; lower prefetch_factor,
    # then num_workers, until it fits the budget, or refuse.
    try:
        plan = plan_for_memory(dataset, BATCH, MEMORY_BUDGET_MB, num_workers=2, prefetch_factor=16)
    except MemoryBudgetError as err:
        sys.exit(f"error: {err}")
    print(plan)
    print(f"metric predicted_peak_mb={plan.predicted_bytes / MIB:.1f}")
    loader = DataLoader(dataset, batch_size=BATCH, **plan.loader_kwargs(),
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch()  # its baseline: the process before the workers exist
    samples, order_checksum = 0, 0
    for images, labels in loader:
        time.sleep(0.05)  # the training step, while the workers run ahead
        for index in (images[:, 0, 0, 0] * IMAGES).round().long().tolist():
            order_checksum += samples * index
            samples += 1
    peak_mb = watch.stop() / MIB
    print(f"metric samples={samples}")
    print(f"metric order_checksum={order_checksum}")
    print(f"metric shm_peak_mb={watch.peak_shm_bytes / MIB:.1f}")
    print(f"metric worker_peak_mb={watch.peak_worker_bytes / MIB:.1f}")
    print(f"metric measured_peak_mb={peak_mb:.1f}")
    if peak_mb > MEMORY_BUDGET_MB:
        sys.exit(f"data loading peaked at {peak_mb:.0f} MiB (main + workers + /dev/shm), "
                 f"over the budget of {MEMORY_BUDGET_MB} MiB")
    print(f"read {samples} samples; data loading peaked at {peak_mb:.0f} MiB, "
          f"within the budget of {MEMORY_BUDGET_MB} MiB")


if __name__ == "__main__":
    main()
