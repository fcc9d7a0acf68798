"""Ocean-model training windows read from a Zarr store through a ThreadPoolExecutor that the
dataset creates in __init__ and already uses there (to load coordinates and masks in parallel),
then uses again in __getitem__ to load each window's variables in parallel.  The pool's threads
exist only in the training process: a forked worker inherits the pool's bookkeeping (its idle
threads counted as available) but none of its threads, so the worker's first submit() queues a
task that nobody runs and future.result() waits forever.

Source: m2lines/Samudra pull request https://github.com/m2lines/Samudra/pull/660 ("Each worker
should have its own ThreadPoolExecutor": the executors are made lazily, per worker, to avoid
"inheriting fork-corrupted locks from the parent"), src/ocean_emulators/datasets.py.
Faulty: scenario 01 (threads and locks of the training process copied into forked workers; the
worker hangs on every run, before its first sample).
"""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

VARIABLES = ("thetao", "so", "uo", "vo", "zos")
STEPS, LAT, LON = 260, 16, 32


class ZarrWindows(Dataset):
    def __init__(self, hist: int = 1):
        rng = np.random.default_rng(3)
        self.store = {name: rng.standard_normal((STEPS, LAT, LON)).astype(np.float32) for name in VARIABLES}
        self.hist = hist
        self.pool = ThreadPoolExecutor(max_workers=4)
        # Coordinates and masks loaded in parallel while the dataset is built: the pool's
        # threads start here, in the training process, and then wait idle.
        self.wet = np.stack([f.result() for f in [self.pool.submit(self._mask, v) for v in VARIABLES]])

    def _mask(self, name):
        time.sleep(0.02)  # a read from the store: every thread of the pool gets work
        return np.isfinite(self.store[name][0])

    def _load(self, name, start):
        return self.store[name][start:start + self.hist + 2]

    def __len__(self):
        return STEPS - self.hist - 2

    def __getitem__(self, index):
        futures = [self.pool.submit(self._load, name, index) for name in VARIABLES]
        window = torch.from_numpy(np.stack([f.result() for f in futures]))
        window = torch.where(torch.from_numpy(self.wet)[:, None], window, 0.0)
        return window[:, :self.hist + 1], window[:, self.hist + 1:]


def make_loader():
    return DataLoader(ZarrWindows(), batch_size=8, shuffle=True, num_workers=2)
