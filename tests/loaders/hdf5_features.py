"""Features stored in an HDF5 file, opened once when the dataset is made: by its path, or
through a Python file object (as fsspec and s3fs hand it to h5py)."""
import tempfile
from pathlib import Path

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

FILE = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "features.h5"


class H5Features(Dataset):
    def __init__(self, path, through_file_object=False):
        self.file = h5py.File(open(path, "rb") if through_file_object else path, "r")
        self.features = self.file["features"]

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return torch.from_numpy(self.features[index])


def _write_file():
    if not FILE.exists():
        FILE.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(FILE, "w") as out:
            out["features"] = np.random.default_rng(0).standard_normal((512, 32), dtype=np.float32)


def make_loader():
    _write_file()
    return DataLoader(H5Features(FILE), batch_size=32, num_workers=2)


def from_file_object():
    _write_file()
    return DataLoader(H5Features(FILE, through_file_object=True), batch_size=32, num_workers=2)
