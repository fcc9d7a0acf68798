"""A job under forkserver (Python 3.14's default): killed with SIGKILL, its workers and fork server stay."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        time.sleep(0.01)
        return torch.tensor(index)


if __name__ == "__main__":
    loader = DataLoader(Slow(), batch_size=4, num_workers=2, multiprocessing_context="forkserver")
    for step, batch in enumerate(loader):
        if step == 2:
            print("started", flush=True)
