"""Samples returned as a dict of small NumPy arrays (agent histories of a motion-prediction
dataset), batched by the default collate into one tensor per key, with a loop that keeps
data["d1"].numpy() of every batch.  The NumPy view shares the batch's shared-memory storage, so
each kept array holds one file descriptor of the training process, and on Linux the loop fails
with "RuntimeError: received 0 items of ancdata" (today: "Too many open files"); macOS and
Windows, which share tensors differently, ran it to the end.

Source: pytorch/pytorch issue https://github.com/pytorch/pytorch/issues/41465 ("received 0 items
of ancdata when appending dic elements to a list", MyDataset returning {"d1": np.zeros((50, 2))}
with batch_size=64 and num_workers=4); the diagnosis of the error message in
https://github.com/pytorch/pytorch/pull/34768.
Faulty: scenario 08 (one shared block per batch, kept through a NumPy view).
"""
import numpy as np
from torch.utils.data import DataLoader, Dataset


class AgentHistories(Dataset):
    def __init__(self, length: int = 384):
        self.length = length   # 60000 * 64 in the issue

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return {"d1": np.zeros((50, 2))}


def make_loader():
    return DataLoader(AgentHistories(), batch_size=64, num_workers=4, shuffle=False)
