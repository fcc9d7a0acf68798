"""Each sample is a stack of tiles; the tiles are decoded in parallel with a process pool."""
import multiprocessing

import torch
from torch.utils.data import DataLoader, Dataset


def decode_tile(seed):
    return torch.rand(16, 16, generator=torch.Generator().manual_seed(seed))


class TiledSlides(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        with multiprocessing.Pool(2) as pool:
            tiles = pool.map(decode_tile, range(index * 4, index * 4 + 4))
        return torch.stack(tiles)


def make_loader():
    return DataLoader(TiledSlides(), batch_size=4, num_workers=2)
