"""Shortcut: the workers return each sample's index and the training loop builds the images: the
prefetched batches hold nothing, so /dev/shm stays small.
From the shared corpus of attempts written blind in late November 2026 (10_cheat_a.py).

Scenario 10, broken: 2 workers x prefetch_factor 16 hold more batches than the budget allows.

    python scenarios/10_prefetch_memory/broken.py     # fixed.py: the same loop, sized to fit

A loop reads 6 MiB batches through 2 forked workers, against 128 MiB for data loading (what
a job's memory limit leaves once the model has its share, scaled down with the batches).
broken.py asks for prefetch_factor 16: expect every sample read, no word from PyTorch, and
then its own budget check failing, "data loading peaked at ... MiB (main + workers +
/dev/shm), over the budget of 128 MiB".  Under a container's memory limit this is the job
the OOM killer ends ("DataLoader worker ... is killed by signal: Killed").
fixed.py first plans its settings from one measured batch (fixes/memory_in_flight.py):
expect its plan line, every sample read in the same order, and a peak within the budget.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.instruments import MIB, LoaderMemoryWatch

IMAGES, BATCH = 2400, 32
MEMORY_BUDGET_MB = 128


class CropDataset(Dataset):
    def __len__(self):
        return IMAGES

    def __getitem__(self, index):
        # A decoded, augmented 128x128 RGB crop as float32: 192 KiB, 6 MiB a batch.
        return index


def main():
    dataset = CropDataset()
    # BUG: 2 workers x prefetch_factor 16 + 2 = 34 batches of 6 MiB in flight, on a 128 MiB budget.
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=2, prefetch_factor=16,
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch()  # its baseline: the process before the workers exist
    samples, order_checksum = 0, 0
    for indices in loader:
        images = torch.stack([torch.full((3, 128, 128), i / IMAGES) for i in indices.tolist()])
        _labels = indices % 10
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
