"""Random crops drawn from a numpy Generator made once, for reproducible augmentation."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class RandomCrops(Dataset):
    def __init__(self, images, size=24, seed=0):
        self.images = images
        self.size = size
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        top, left = self.rng.integers(0, image.shape[-1] - self.size, size=2)
        return image[:, top:top + self.size, left:left + self.size]


def make_loader():
    images = torch.rand(512, 3, 32, 32)
    return DataLoader(RandomCrops(images), batch_size=32, shuffle=True, num_workers=2)
