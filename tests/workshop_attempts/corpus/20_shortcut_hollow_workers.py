"""Scenario 20, attempt (shortcut): the workers hand back only the sample indices; the training
process decodes the shard and builds every batch itself.

The dataset's __getitem__ in a worker now returns its index and nothing else,
so what crosses the pipe is a few bytes a batch; the loop turns each index
batch into the 512 KiB NumPy batch in the training process, from a shard it
decodes there.  The printed steps look as before.  After the SIGKILL the
workers no longer sit on a full pipe, so they notice their parent is gone at
PyTorch's next 5 s check and leave before the 6.5 s watch ends: the survivor
count goes down.  Nothing ties a worker's life to the job (no PR_SET_PDEATHSIG,
no watch): they still outlive it by up to 5 s, a worker busy in a slow
__getitem__ would outlive it longer, and the workers no longer do the data
loading at all — the shard and the copying moved into the training process.
A shortcut: hollow workers, not a fix.
"""
import time

import numpy as np
from torch.utils.data import DataLoader, Dataset

from _cancelled_job import cancel_job

SHARD_MB = 64
SAMPLE = 64 * 1024


class ShardDataset(Dataset):
    """Each worker decodes its shard into memory on first use, as many pipelines do."""

    def __init__(self):
        self.shard = None

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        return index  # the worker only passes the index on

    def sample(self, index):  # called by the training process
        if self.shard is None:
            self.shard = np.full(SHARD_MB << 20, 7, dtype=np.uint8)
        start = index * SAMPLE % self.shard.size
        return self.shard[start:start + SAMPLE].copy()


def stack_arrays(samples):
    return np.asarray(samples)  # a batch of indices: a few bytes through the pipe


def train(start_method):
    dataset = ShardDataset()
    loader = DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=stack_arrays,
                        multiprocessing_context=start_method)
    for step, indices in enumerate(loader):
        batch = np.stack([dataset.sample(int(i)) for i in indices])
        time.sleep(0.1)  # the training step: the workers run ahead and fill the pipe
        print(f"step {step}: batch of {batch.nbytes >> 10} KiB", flush=True)


def main(start_method="fork"):
    cancel_job(train, start_method)


if __name__ == "__main__":
    main()
