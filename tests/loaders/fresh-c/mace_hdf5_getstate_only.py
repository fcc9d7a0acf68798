# Source: ACEsuit/mace, mace/data/hdf5_dataset.py (class HDF5Dataset: self._file = None, a `file` property that opens
#   h5py.File(self.file_path, "r") on first use and caches it, __getstate__ that sets "_file" to None "because an opened
#   h5py.File cannot be pickled"; __init__ reads list(self.file.keys()) to size the dataset) as introduced by pull
#   request #117 ("Slight modification to HDF5Dataset", https://github.com/ACEsuit/mace/pull/117, 2023: "If a h5py.File
#   object is an attribute of the Dataset, pickle will complain").
# Kept: the lazy `file` property, the __getstate__ that drops the handle, and __init__ touching self.file (so the file is
#   opened in the main process and stays cached on the dataset); groups config_batch_<b>/config_<i> with positions,
#   atomic_numbers, energy, forces; index -> (batch_index, config_index); DataLoader with shuffle and 4 workers.
# Changed: 16 batches x 8 synthetic configurations written with h5py to a temp dir (removed at exit);
#   AtomicData.from_config (neighbour lists, one-hot species) replaced by a dict of tensors padded to 12 atoms;
#   the torch_geometric DataLoader replaced by torch's with the default collate.
# EXPECTED: 18 (the __getstate__ fix helps only when the dataset is pickled (spawn); under fork the workers inherit
#   the h5py.File that __init__ opened in the parent, the pattern scenario 18 teaches)
import atexit
import os
import shutil
import tempfile

import h5py
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

MAX_ATOMS = 12


def _write_h5(n_batches=16, batch_size=8):
    root = tempfile.mkdtemp(prefix="fc-mace-")
    atexit.register(shutil.rmtree, root, True)
    path = os.path.join(root, "train_0.h5")
    rng = np.random.default_rng(117)
    with h5py.File(path, "w") as f:
        f.attrs["drop_last"] = False
        for b in range(n_batches):
            grp = f.create_group(f"config_batch_{b}")
            for c in range(batch_size):
                n = int(rng.integers(4, MAX_ATOMS + 1))
                sub = grp.create_group(f"config_{c}")
                sub["atomic_numbers"] = rng.integers(1, 18, n)
                sub["positions"] = rng.normal(size=(n, 3))
                sub["energy"] = float(rng.normal())
                sub["forces"] = rng.normal(size=(n, 3))
                sub["config_type"] = "Default"
    return path


def unpack_value(value):
    value = value.decode("utf-8") if isinstance(value, bytes) else value
    return None if str(value) == "None" else value


class HDF5Dataset(Dataset):
    def __init__(self, file_path, r_max, **kwargs):
        super(HDF5Dataset, self).__init__()
        self.file_path = file_path
        self._file = None
        batch_key = list(self.file.keys())[0]
        self.batch_size = len(self.file[batch_key].keys())
        self.length = len(self.file.keys()) * self.batch_size
        self.r_max = r_max
        try:
            self.drop_last = bool(self.file.attrs["drop_last"])
        except KeyError:
            self.drop_last = False

    @property
    def file(self):
        if self._file is None:
            # If a file has not already been opened, open one here
            self._file = h5py.File(self.file_path, "r")
        return self._file

    def __getstate__(self):
        _d = dict(self.__dict__)
        # An opened h5py.File cannot be pickled, so we must exclude it from the state
        _d["_file"] = None
        return _d

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        batch_index = index // self.batch_size
        config_index = index % self.batch_size
        grp = self.file["config_batch_" + str(batch_index)]
        subgrp = grp["config_" + str(config_index)]
        numbers = subgrp["atomic_numbers"][()]
        positions = subgrp["positions"][()]
        forces = unpack_value(subgrp["forces"][()])
        n = len(numbers)
        pad = MAX_ATOMS - n
        return {
            "atomic_numbers": torch.from_numpy(np.pad(numbers, (0, pad))),
            "positions": torch.from_numpy(np.pad(positions, ((0, pad), (0, 0)))).float(),
            "forces": torch.from_numpy(np.pad(forces, ((0, pad), (0, 0)))).float(),
            "energy": torch.tensor(float(unpack_value(subgrp["energy"][()]))),
            "num_atoms": torch.tensor(n),
        }


def make_loader():
    dataset = HDF5Dataset(_write_h5(), r_max=5.0)
    return DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
