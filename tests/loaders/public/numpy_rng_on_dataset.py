"""Random crops drawn from a numpy RandomState created with a fixed seed in __init__ and kept on
the dataset, as pytorch-3dunet's augmentations held theirs: every forked worker starts from a
copy of that state, so the workers crop alike.

Source: wolny/pytorch-3dunet issue https://github.com/wolny/pytorch-3dunet/issues/32 (the
dataset's random state "initialized with a fixed seed", shared by the workers); background in
pytorch/pytorch issue https://github.com/pytorch/pytorch/issues/5059.
Faulty: scenario 12 (identical draws in the workers).
"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class RandomCrops(Dataset):
    def __init__(self, count: int = 256, seed: int = 0):
        self.images = np.arange(count * 64 * 64, dtype=np.float32).reshape(count, 64, 64)
        self.rng = np.random.RandomState(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        top, left = self.rng.randint(0, 32, size=2)
        return torch.from_numpy(self.images[index, top:top + 32, left:left + 32].copy())


def make_loader():
    return DataLoader(RandomCrops(), batch_size=16, num_workers=2)
