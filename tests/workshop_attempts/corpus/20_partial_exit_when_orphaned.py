"""Each worker checks in __getitem__ whether the job that built the dataset is still its parent,
and exits if not. Not a fix: an orphaned worker gets no more indices, so it never asks.
"""
import os
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
        self.trainer = os.getpid()

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        if os.getppid() != self.trainer:  # the job is gone: do not outlive it
            os._exit(0)
        if self.shard is None:
            self.shard = np.full(SHARD_MB << 20, 7, dtype=np.uint8)
        start = index * SAMPLE % self.shard.size
        return self.shard[start:start + SAMPLE].copy()


def stack_arrays(samples):
    return np.stack(samples)  # a NumPy batch: pickled bytes through the pipe, no shared memory


def train(start_method):
    loader = DataLoader(ShardDataset(), batch_size=8, num_workers=2, collate_fn=stack_arrays,
                        multiprocessing_context=start_method)  # BUG: nothing ties the workers to this job
    for step, batch in enumerate(loader):
        time.sleep(0.1)  # the training step: the workers run ahead and fill the pipe
        print(f"step {step}: batch of {batch.nbytes >> 10} KiB", flush=True)


def main(start_method="fork"):
    cancel_job(train, start_method)


if __name__ == "__main__":
    main()
