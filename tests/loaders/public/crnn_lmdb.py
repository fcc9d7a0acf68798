"""Text-line images in an LMDB database whose environment is opened in __init__, as
crnn.pytorch's lmdbDataset does: the forked workers inherit one open environment.

Source: meijieru/crnn.pytorch, dataset.py (class lmdbDataset), commit 4c8e7abfe62435c2c419750ac227bb6ef1d1d00f
https://github.com/meijieru/crnn.pytorch/blob/4c8e7abfe62435c2c419750ac227bb6ef1d1d00f/dataset.py
Faulty: scenario 11 (an open connection shared by the workers).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import lmdb
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_database(root: Path, count: int = 200) -> None:
    rng = np.random.default_rng(2)
    with lmdb.open(str(root), map_size=64 * 2**20) as env, env.begin(write=True) as txn:
        for i in range(1, count + 1):
            txn.put(b"image-%09d" % i, rng.integers(0, 256, 32 * 100, dtype=np.uint8).tobytes())
            txn.put(b"label-%09d" % i, f"word{i}".encode())
        txn.put(b"num-samples", str(count).encode())


class LmdbLines(Dataset):
    def __init__(self, root):
        self.env = lmdb.open(str(root), readonly=True, lock=False, readahead=False, meminit=False)
        with self.env.begin() as txn:
            self.count = int(txn.get(b"num-samples"))

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        with self.env.begin() as txn:
            pixels = np.frombuffer(txn.get(b"image-%09d" % (index + 1)), dtype=np.uint8)
            label = txn.get(b"label-%09d" % (index + 1)).decode()
        return torch.from_numpy(pixels.reshape(32, 100).copy()), len(label)


def make_loader():
    root = scratch() / "lines.lmdb"
    write_database(root)
    return DataLoader(LmdbLines(root), batch_size=16, shuffle=True, num_workers=2)
