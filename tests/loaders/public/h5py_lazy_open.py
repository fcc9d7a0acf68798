"""Tiles in an HDF5 file that each worker opens on its first __getitem__ (the file's length is
read once in __init__ with a file that is closed again), the remedy given in pytorch/pytorch
issue 11929 and the first of the three loaders compared in pathml issue 131.

Source: Dana-Farber-AIOS/pathml issue https://github.com/Dana-Farber-AIOS/pathml/issues/131
(Dataset1, "opening hdf5 file once in __getitem__"); pytorch/pytorch issue
https://github.com/pytorch/pytorch/issues/11929.
Well built: no risk expected.
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


def write_tiles(path: Path, count: int = 256) -> None:
    with h5py.File(path, "w") as out:
        out["tiles"] = np.random.default_rng(8).integers(0, 255, (count, 3, 16, 16), dtype=np.uint8)


class Tiles(Dataset):
    def __init__(self, path: Path):
        self.path = path
        self.h5 = None
        with h5py.File(path, "r") as probe:
            self.count = len(probe["tiles"])

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if self.h5 is None:  # opened in the worker that reads, never before the fork
            self.h5 = h5py.File(self.path, "r")
        return torch.from_numpy(self.h5["tiles"][index])


def make_loader():
    path = scratch() / "tiles.h5"
    write_tiles(path)
    return DataLoader(Tiles(path), batch_size=32, shuffle=True, num_workers=2)
