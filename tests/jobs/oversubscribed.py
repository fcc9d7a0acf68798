"""A job whose workers' BLAS pools compete for the cores: a colour-jitter matrix product per
sample, the pools left as numpy's BLAS sized them for the whole machine (scenario 21's cause)."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Jittered(Dataset):
    def __init__(self):
        rng = np.random.default_rng(0)
        self.pixels = rng.random((640 * 640, 3), dtype=np.float32)
        self.jitter = (np.eye(3) + rng.normal(0, 0.1, (3, 3))).astype(np.float32)

    def __len__(self):
        return 1_000_000

    def __getitem__(self, index):
        return torch.from_numpy((self.pixels @ self.jitter)[index % 1000].copy())


if __name__ == "__main__":
    loader = DataLoader(Jittered(), batch_size=4, num_workers=2, multiprocessing_context="fork")
    print("started", flush=True)
    for batch in loader:
        pass
