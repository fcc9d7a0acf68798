"""A well-built loader with timeout=60, as the doctor's own note on timeout=0 recommends:
the doctor's num_workers=0 comparison must not copy the timeout (PyTorch refuses it there)."""
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __init__(self, count: int = 512):
        self.values = torch.arange(count, dtype=torch.float32)

    def __len__(self):
        return len(self.values)

    def __getitem__(self, index):
        return self.values[index], self.values[index] ** 2


def make_loader():
    return DataLoader(Squares(), batch_size=16, num_workers=2, timeout=60)
