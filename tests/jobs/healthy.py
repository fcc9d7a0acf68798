"""A healthy job: numpy arrays, a model step that takes longer than loading."""
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self):
        self.x = np.random.default_rng(0).random((4096, 64), dtype=np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return torch.from_numpy(self.x[index])


if __name__ == "__main__":
    loader = DataLoader(Features(), batch_size=64, num_workers=2, multiprocessing_context="fork",
                        persistent_workers=True)
    print("started", flush=True)
    while True:
        for batch in loader:
            time.sleep(0.05)  # the model's step
            batch.sum()
