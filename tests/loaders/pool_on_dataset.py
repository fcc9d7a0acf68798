"""Tiles decoded by a process pool that the dataset creates once and reuses."""
import multiprocessing

import torch
from torch.utils.data import DataLoader, Dataset


def decode_tile(seed):
    return torch.rand(16, 16, generator=torch.Generator().manual_seed(seed))


class TiledSlides(Dataset):
    def __init__(self):
        self.pool = multiprocessing.Pool(2)  # made once: starting processes per sample is slow

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.stack(self.pool.map(decode_tile, range(index * 4, index * 4 + 4)))


def make_loader():
    return DataLoader(TiledSlides(), batch_size=4, num_workers=2)
