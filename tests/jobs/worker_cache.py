"""A job whose workers grow from their own allocations: each fills a cache of decoded samples by
index (a dict per worker), nothing copied from the training process.  doctor --pid must tell that
from copy-on-read (scenario 03): a note at most."""
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Decoded(Dataset):
    def __init__(self):
        self.cache = {}

    def __len__(self):
        return 2000

    def __getitem__(self, index):
        if index not in self.cache:
            time.sleep(0.001)  # decoding
            self.cache[index] = np.full(128 * 1024, index % 251, dtype=np.uint8)  # 128 KB a sample
        return torch.from_numpy(self.cache[index][:8].copy())


if __name__ == "__main__":
    loader = DataLoader(Decoded(), batch_size=8, num_workers=2, multiprocessing_context="fork")
    print("started", flush=True)
    while True:
        for batch in loader:
            time.sleep(0.03)  # the model's step: loading keeps up
