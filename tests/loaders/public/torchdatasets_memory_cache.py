"""A dataset whose expensive per-sample preprocessing is cached with torchdatasets'
`.cache()`, whose default cacher (cachers.Memory) is a plain dict on the dataset: the first
epoch is meant to fill it and later epochs to read from it.  With num_workers > 0 every worker
fills its own copy of the dict, the copies die with the workers at the end of the epoch, and the
main process's dict stays empty: each epoch pays the preprocessing again ("does nothing when the
Dataset is used in a multi-process DataLoader").

Source: szymonmaszke/torchdatasets issue https://github.com/szymonmaszke/torchdatasets/issues/26
("Document gotcha when using DataLoader with workers"), and torchdatasets/cachers.py (Memory),
commit 1d2f91a6d2ff1da23a471f1b77fb95389ad65d1d
https://github.com/szymonmaszke/torchdatasets/blob/1d2f91a6d2ff1da23a471f1b77fb95389ad65d1d/torchdatasets/cachers.py
Faulty: scenario 05 (a cache filled in the workers, expected to be shared).
"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class MemoryCacher:
    def __init__(self):
        self.cache = {}

    def __contains__(self, index):
        return index in self.cache

    def __setitem__(self, index, data):
        self.cache[index] = data

    def __getitem__(self, index):
        return self.cache[index]


class CachedImages(Dataset):
    """Stands in for td.Dataset(...).map(preprocess).cache()."""

    def __init__(self, count: int = 256):
        self.raw = np.random.default_rng(2).integers(0, 255, (count, 48, 48), dtype=np.uint8)
        self.cacher = MemoryCacher()

    def __len__(self):
        return len(self.raw)

    def preprocess(self, index):
        image = torch.from_numpy(self.raw[index]).float().div(255)
        blurred = torch.nn.functional.avg_pool2d(image[None, None], 3, stride=1, padding=1)[0]
        return (blurred - blurred.mean()) / (blurred.std() + 1e-6)

    def __getitem__(self, index):
        if index in self.cacher:
            return self.cacher[index]
        sample = self.preprocess(index)
        self.cacher[index] = sample
        return sample


def make_loader():
    return DataLoader(CachedImages(), batch_size=32, shuffle=True, num_workers=2)
