"""Features stored in an HDF5 file, opened once when the dataset is made."""
import tempfile
from pathlib import Path

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

FILE = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "features.h5"


class H5Features(Dataset):
    def __init__(self, path):
        self.file = h5py.File(path, "r")
        self.features = self.file["features"]

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return torch.from_numpy(self.features[index])


def make_loader():
    if not FILE.exists():
        FILE.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(FILE, "w") as out:
            out["features"] = np.random.default_rng(0).standard_normal((512, 32), dtype=np.float32)
    return DataLoader(H5Features(FILE), batch_size=32, num_workers=2)
