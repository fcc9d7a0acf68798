"""Scenario 04, fixed: the loader's settings are sized to the free /dev/shm.

    python scenarios/04_dev_shm_exhaustion/broken.py     # fixed.py: the same loop, sized to fit

Both scripts re-run themselves in a private mount namespace whose /dev/shm is a 16 MiB
tmpfs: Docker's default 64 MB --shm-size, scaled down with the batches (3.4 MiB each).
broken.py asks for 2 workers x prefetch_factor 4; expect, within a second or two,

    RuntimeError: Caught RuntimeError in DataLoader worker process N.
    ... unable to allocate shared memory(shm) for file </torch_…>: No space left on device (28)

fixed.py first sizes the loader to the free /dev/shm (fixes/memory_in_flight.py): expect
its plan line (2 workers, prefetch_factor 1) and all 640 samples read.
"""
import faulthandler
import time

from _small_shm import run_in_small_shm

SHM_MB = 16
run_in_small_shm(SHM_MB)  # the script starts over in its namespace: do it before torch loads

import torch
from torch.utils.data import DataLoader, Dataset

from fixes.memory_in_flight import plan_in_flight
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
    # FIX: measure one batch; lower prefetch_factor, then num_workers, until they fit, or refuse.
    plan = plan_in_flight(dataset, batch_size, num_workers=2, prefetch_factor=4, collate_fn=collate_fn)
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
        print(f"metric shm_peak_mb={shm.stop() / MIB:.1f}")
    print(f"read {seen} of {IMAGES} samples through a {SHM_MB} MiB /dev/shm")


if __name__ == "__main__":
    main()
