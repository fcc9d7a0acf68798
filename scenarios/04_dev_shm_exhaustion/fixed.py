"""Scenario 04, fixed: the loader's settings are sized to the free /dev/shm.

    python scenarios/04_dev_shm_exhaustion/fixed.py

The script re-runs itself in a private mount namespace whose /dev/shm is a
16 MiB tmpfs, as broken.py does.  Expect the budget line (2 workers, but
prefetch_factor 1 instead of 4) and all 640 samples read, the peak use of
/dev/shm measured below its 16 MiB.
"""
import faulthandler
import sys
import time

from small_shm import run_in_small_shm

SHM_MB = 16
run_in_small_shm(SHM_MB)  # the script starts over in its namespace: do it before torch loads

import torch
from torch.utils.data import DataLoader, Dataset

from fixes.shm_budget import ShmBudgetError, plan_for_shm
from scenarios.instruments import ShmUsageWatch

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
    # FIX: measure one batch, fit workers x prefetch_factor into the free /dev/shm, or refuse.
    try:
        plan = plan_for_shm(dataset, batch_size, num_workers=2, prefetch_factor=4,
                            collate_fn=collate_fn)
    except ShmBudgetError as err:
        sys.exit(f"error: {err}")
    print(plan)
    loader = DataLoader(dataset, batch_size=batch_size, **plan.loader_kwargs(),
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
        print(f"metric shm_peak_mb={shm.stop() / 2**20:.1f}")
    print(f"read {seen} of {IMAGES} samples through a {SHM_MB} MiB /dev/shm")


if __name__ == "__main__":
    main()
