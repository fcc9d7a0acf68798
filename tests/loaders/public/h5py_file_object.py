"""An HDF5 file opened in __init__ through a Python file object (the way fsspec/s3fs hand a
remote file to h5py), its datasets kept on the dataset: the forked workers share one file
offset, as in pytorch/pytorch issue 11887 ("the data loaded are wrong, or an error").

Source: pytorch/pytorch issue https://github.com/pytorch/pytorch/issues/11887 (h5py.File in
__init__, read in __getitem__ with num_workers > 1); the file object as
h5py.File(fsspec.open(...).open()) passes it.
Faulty: scenario 18 (an HDF5 handle opened before the fork).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_file(path: Path, count: int = 256) -> None:
    rng = np.random.default_rng(9)
    with h5py.File(path, "w") as out:
        out["images"] = rng.integers(0, 255, (count, 16, 16), dtype=np.uint8)
        out["labels"] = rng.integers(0, 10, count)


class Homography(Dataset):
    def __init__(self, path: Path):
        self.db = h5py.File(open(path, "rb"), "r")
        self.images, self.labels = self.db["images"], self.db["labels"]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return torch.from_numpy(self.images[index]), int(self.labels[index])


def make_loader():
    path = scratch() / "homography.h5"
    write_file(path)
    return DataLoader(Homography(path), batch_size=32, shuffle=True, num_workers=2)
