"""Lowers prefetch_factor to 3: 8 batches in flight, 27 MiB, still more than the 16 MiB /dev/shm. Partial.
"""
import faulthandler
import time

from _small_shm import run_in_small_shm

SHM_MB = 16
run_in_small_shm(SHM_MB)  # the script starts over in its namespace: do it before torch loads

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.instruments import MIB, ShmUsageWatch

IMAGES, BATCH = 640, 32
STALL_S = 10  # no batch for this long means the loader has stopped (see broken_send_hang.py)


class CropDataset(Dataset):
    def __len__(self):
        return IMAGES

    def __getitem__(self, index):
        # A decoded, augmented 96x96 RGB crop as float32: 108 KiB, 3.4 MiB a batch.
        return torch.full((3, 96, 96), index / IMAGES), torch.tensor(index % 10)


def main(batch_size=BATCH, collate_fn=None):
    dataset = CropDataset()
    # BUG: 2 workers x prefetch_factor 4 + 2 = 10 batches in flight: 34 MiB for a 16 MiB /dev/shm.
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=2, prefetch_factor=3,
                        collate_fn=collate_fn, multiprocessing_context="fork")
    shm, seen = ShmUsageWatch(), 0
    try:
        faulthandler.dump_traceback_later(STALL_S, exit=True)
        for images, labels in loader:
            time.sleep(0.02)  # the GPU step, while the workers run ahead
            seen += len(labels)
            faulthandler.dump_traceback_later(STALL_S, exit=True)
    finally:
        faulthandler.cancel_dump_traceback_later()
        print(f"metric samples={seen}")
        print(f"metric shm_peak_mb={shm.stop() / MIB:.1f}")
    print(f"read {seen} of {IMAGES} samples through a {SHM_MB} MiB /dev/shm")


if __name__ == "__main__":
    main()
