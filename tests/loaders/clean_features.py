"""A well-built loader: features in a numpy array, labels in a tensor, augmentation
drawn from torch's global generator (which PyTorch seeds per worker)."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class FeatureDataset(Dataset):
    def __init__(self, features: np.ndarray, labels: np.ndarray):
        self.features = torch.from_numpy(features)
        self.labels = torch.from_numpy(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        x = self.features[index]
        x = x + 0.01 * torch.randn_like(x)  # jitter
        return x, self.labels[index]


def make_loader():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((2048, 64), dtype=np.float32)
    labels = rng.integers(0, 10, size=2048)
    return DataLoader(FeatureDataset(features, labels), batch_size=64, shuffle=True,
                      num_workers=2, drop_last=True)


def make_loader_many_workers():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((2048, 64), dtype=np.float32)
    labels = rng.integers(0, 10, size=2048)
    return DataLoader(FeatureDataset(features, labels), batch_size=64, shuffle=True,
                      num_workers=8)
