"""CIFAR-10 batches unpickled once in __init__ and kept as one uint8 numpy array of shape
(N, 32, 32, 3) plus a list of labels, as torchvision's CIFAR10 holds them (self.data, self.targets);
__getitem__ slices the array and turns the image into a float tensor.

Source: pytorch/vision, torchvision/datasets/cifar.py (CIFAR10.__init__ and __getitem__),
commit 5c2bb42d9594c4d1a2c892fca7279538626b2aad
https://github.com/pytorch/vision/blob/5c2bb42d9594c4d1a2c892fca7279538626b2aad/torchvision/datasets/cifar.py
Well built: no risk expected (the images are one numpy buffer, not Python objects).
"""
import atexit
import pickle
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_batches(root: Path, batches: int = 2, per_batch: int = 1_000) -> list:
    """Files in the layout of cifar-10-batches-py: pickled dicts of flat rows and labels."""
    rng = np.random.default_rng(21)
    paths = []
    for b in range(batches):
        entry = {"data": rng.integers(0, 256, (per_batch, 3 * 32 * 32), dtype=np.uint8),
                 "labels": rng.integers(0, 10, per_batch).tolist()}
        path = root / f"data_batch_{b + 1}"
        with open(path, "wb") as out:
            pickle.dump(entry, out)
        paths.append(path)
    return paths


class CIFAR10Like(Dataset):
    def __init__(self, batch_files: list):
        chunks, self.targets = [], []
        for path in batch_files:
            with open(path, "rb") as f:
                entry = pickle.load(f, encoding="latin1")
            chunks.append(entry["data"])
            self.targets.extend(entry["labels"])
        # one contiguous array, channels last, as the dataset keeps it
        self.data = np.vstack(chunks).reshape(-1, 3, 32, 32).transpose((0, 2, 3, 1))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image = torch.from_numpy(np.ascontiguousarray(self.data[index])).permute(2, 0, 1).float().div(255)
        return image, self.targets[index]


def make_loader():
    return DataLoader(CIFAR10Like(write_batches(scratch())), batch_size=64, shuffle=True, num_workers=2)
