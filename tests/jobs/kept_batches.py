"""A job near `ulimit -n`: it keeps every batch (outputs gathered for a metric), run with a low limit.

    python kept_batches.py [LIMIT KEPT]    # default 256 100: ~200 of 256; 1024 403: ~806 of 1,024
"""
import resource
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        return torch.full((4,), float(index)), torch.tensor(index)


if __name__ == "__main__":
    limit, keep = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (256, 100)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    kept = []
    print("started", flush=True)
    for features, labels in DataLoader(Pairs(), batch_size=4, num_workers=2, multiprocessing_context="fork"):
        kept.append((features, labels))
        if len(kept) >= keep:  # two descriptors a batch: near the limit, and then it waits there
            print("kept", len(kept), flush=True)
            while True:
                time.sleep(1)
