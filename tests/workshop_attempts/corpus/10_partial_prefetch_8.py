"""Halves prefetch_factor to 8: 18 batches of 6 MiB are still over the 128 MiB budget. Partial.
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
        return torch.full((3, 128, 128), index / IMAGES), torch.tensor(index % 10)


def main():
    dataset = CropDataset()
    # BUG: 2 workers x prefetch_factor 16 + 2 = 34 batches of 6 MiB in flight, on a 128 MiB budget.
    loader = DataLoader(dataset, batch_size=BATCH, num_workers=2, prefetch_factor=8,
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
