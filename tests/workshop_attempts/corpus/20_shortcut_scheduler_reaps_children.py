"""Shortcut: in the process that plays the scheduler, the job's send_signal is replaced by one that
kills the job's children first, so the script's watch finds none; the job killed by its pid alone
(the OOM killer) still leaves its workers.

Scenario 20, broken: the training job is SIGKILLed and its DataLoader workers live on.

    python scenarios/20_orphaned_workers_after_sigkill/broken.py    # or fixed.py

A training job reads batches of NumPy arrays (they reach it pickled, through a
pipe); each worker keeps its shard in memory.  At step 3 the job is killed with
SIGKILL, as the OOM killer or a scheduler kills a job's main process; then the
script watches the job's processes for 6.5 s, and only then ends what is left.

broken.py: nothing is printed by anyone; expect "fork: after 6.5 s: 1 of 2 alive"
(or 2 of 2) and "left behind: pid … (DataLoader worker), parent now pid 1"
(or the nearest subreaper), each survivor holding its memory: the workers saw
their parent gone, left their loop, and wait in their exit on a full pipe.
fixed.py: "fork: after 0.5 s: 0 of 2 alive": the kernel killed each worker
with the job.
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
    import subprocess

    import psutil

    original = subprocess.Popen.send_signal

    def send_signal(self, sig):
        for child in psutil.Process(self.pid).children(recursive=True):
            child.kill()
        original(self, sig)

    subprocess.Popen.send_signal = send_signal
    cancel_job(train, start_method)


if __name__ == "__main__":
    main()
