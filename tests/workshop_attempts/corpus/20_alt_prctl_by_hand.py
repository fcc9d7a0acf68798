"""A worker_init_fn of its own calls prctl(PR_SET_PDEATHSIG, SIGKILL) through ctypes, so the
kernel kills each worker when the job dies. A fix.
"""
import ctypes
import signal
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
        if self.shard is None:
            self.shard = np.full(SHARD_MB << 20, 7, dtype=np.uint8)
        start = index * SAMPLE % self.shard.size
        return self.shard[start:start + SAMPLE].copy()


def die_with_parent(worker_id):
    # ask the kernel to SIGKILL this worker when the process that forked it dies
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def stack_arrays(samples):
    return np.stack(samples)  # a NumPy batch: pickled bytes through the pipe, no shared memory


def train(start_method):
    # BUG: nothing ties the workers to this job
    loader = DataLoader(ShardDataset(), batch_size=8, num_workers=2, collate_fn=stack_arrays,
                        multiprocessing_context=start_method, worker_init_fn=die_with_parent)
    for step, batch in enumerate(loader):
        time.sleep(0.1)  # the training step: the workers run ahead and fill the pipe
        print(f"step {step}: batch of {batch.nbytes >> 10} KiB", flush=True)


def main(start_method="fork"):
    cancel_job(train, start_method)


if __name__ == "__main__":
    main()
