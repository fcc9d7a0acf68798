"""A job stuck now: a lock held by a thread when the workers fork (scenario 01's cause)."""
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

LOCK = threading.Lock()


class Labels(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        with LOCK:
            return torch.tensor(index)


def hold_the_lock():
    while True:
        with LOCK:
            time.sleep(0.5)


if __name__ == "__main__":
    threading.Thread(target=hold_the_lock, daemon=True).start()
    time.sleep(0.1)
    with LOCK:  # held at the fork, as the refresh thread holds it half of the time
        batches = iter(DataLoader(Labels(), batch_size=8, num_workers=2, multiprocessing_context="fork"))
    print("started", flush=True)
    for batch in batches:
        print(int(batch.sum()), flush=True)
