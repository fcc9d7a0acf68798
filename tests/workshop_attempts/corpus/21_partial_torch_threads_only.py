"""A worker_init_fn that calls torch.set_num_threads(1). Not a fix: PyTorch already does that in
its workers; OpenCV's and the BLAS's pools are not torch's and keep their size.
"""
import sys

import cv2
import torch
from torch.utils.data import DataLoader, Dataset

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


def one_thread(worker_id):
    torch.set_num_threads(1)


def main():
    cores = one_worker_per_core()
    # BUG: each worker's OpenCV and BLAS pools start as many threads as the machine has cores.
    loader = DataLoader(AugmentedPhotos(), batch_size=BATCH, num_workers=cores, worker_init_fn=one_thread)
    run = load_epoch(loader)
    report(run)
    if run["busy_threads_per_core"] > 1.25:
        sys.exit(f"{run['workers']} workers kept {run['busy_threads_per_core'] * cores:.0f} threads busy "
                 f"on {cores} cores (target: one per core): the libraries' thread pools oversubscribe the CPUs")
    print(f"one busy thread per core: {run['samples_per_s']:.1f} samples/s")


if __name__ == "__main__":
    main()
