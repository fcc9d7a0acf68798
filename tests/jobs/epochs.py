"""A healthy training job across its whole life: short epochs of a training loader, each followed
by a validation loader's pass, forever.  With the default non-persistent workers each loader's
workers start with its epoch and exit at its end (the trainer reaps them), so an examination
meets workers starting, ending, already reaped, or none at all between two loaders.

    python tests/jobs/epochs.py [persistent|transient] [EPOCH_BATCHES] [fork|spawn|forkserver]

Prints "started" once the first epoch runs and "epoch N" at each epoch's end.
"""
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __init__(self, rows: int):
        self.x = np.random.default_rng(0).random((rows, 32), dtype=np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return torch.from_numpy(self.x[index])


def loaders(persistent: bool, batches: int, context: str) -> tuple[DataLoader, DataLoader]:
    options = dict(batch_size=16, num_workers=2, multiprocessing_context=context, persistent_workers=persistent)
    return (DataLoader(Features(16 * batches), shuffle=True, **options),
            DataLoader(Features(16 * max(2, batches // 4)), **options))


if __name__ == "__main__":
    persistent = (sys.argv[1:2] or ["transient"])[0] == "persistent"
    train, validation = loaders(persistent, int((sys.argv[2:3] or ["12"])[0]), (sys.argv[3:4] or ["fork"])[0])
    weights = torch.randn(32, 8)
    print("started", flush=True)
    for epoch in range(1_000_000):
        for batch in train:
            time.sleep(0.02)  # the model's step
            (batch @ weights).sum()
        with torch.no_grad():
            for batch in validation:
                (batch @ weights).sum()
        time.sleep(0.05)  # between epochs: a checkpoint, a log line
        print(f"epoch {epoch}", flush=True)
