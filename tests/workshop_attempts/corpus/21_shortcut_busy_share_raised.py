"""Shortcut: `_augment.BUSY_SHARE = 0.51`: a thread counts as busy only with more than half
of its worker's CPU, so the census finds one busy thread per worker while both of its pools'
threads run. Nothing in the workers changed.

Scenario 21, broken: each worker's OpenCV and BLAS pools are sized for the whole machine.

    python scenarios/21_thread_oversubscription/broken.py    # or fixed.py

Each sample is a photo resized, blurred (OpenCV) and colour-jittered (a numpy matrix
product, which runs in the BLAS), then cropped: a common augmentation.  The loader has
as many workers as the machine has cores, the usual advice.

broken.py: no error.  PyTorch gives each worker one intra-op thread, but OpenCV and the
BLAS keep a pool as large as the machine in every worker; the census of the workers'
threads (from /proc) finds more busy threads than cores, and the script fails its
check of one busy thread per core.
fixed.py: a worker_init_fn sets every library's pool to the worker's share of the cores;
one busy thread per worker, and the same samples.
"""
import sys

import cv2
import torch
from torch.utils.data import DataLoader, Dataset

import _augment
from _augment import BATCH, CROP, OUT, SAMPLES, load_epoch, one_worker_per_core, photos, report


class AugmentedPhotos(Dataset):
    def __init__(self):
        self.photos, self.colour = photos()

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        image = cv2.resize(self.photos[index % len(self.photos)], (OUT, OUT), interpolation=cv2.INTER_CUBIC)
        image = cv2.GaussianBlur(image, (9, 9), 0)
        jittered = image.reshape(-1, 3).astype("float32") @ self.colour  # a BLAS call
        top = (index * 37) % (OUT - CROP)
        crop = jittered.reshape(OUT, OUT, 3)[top:top + CROP, top:top + CROP]
        return torch.from_numpy(crop.copy()).permute(2, 0, 1)


def main():
    cores = one_worker_per_core()
    _augment.BUSY_SHARE = 0.51
    # BUG: each worker's OpenCV and BLAS pools start as many threads as the machine has cores.
    loader = DataLoader(AugmentedPhotos(), batch_size=BATCH, num_workers=cores)
    run = load_epoch(loader)
    report(run)
    if run["busy_threads_per_core"] > 1.25:
        sys.exit(f"{run['workers']} workers kept {run['busy_threads_per_core'] * cores:.0f} threads busy "
                 f"on {cores} cores (target: one per core): the libraries' thread pools oversubscribe the CPUs")
    print(f"one busy thread per core: {run['samples_per_s']:.1f} samples/s")


if __name__ == "__main__":
    main()
