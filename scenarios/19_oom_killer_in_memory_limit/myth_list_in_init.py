"""Scenario 19, myth: "load the data once in __init__ and the forked workers share it".

    python scenarios/19_oom_killer_in_memory_limit/myth_list_in_init.py

The usual answer to per-worker copies: build the records in the main process, before
the fork, so that the workers inherit them.  As a list of dicts they are shared only
until read: each read writes a reference count and copies the page (scenario 03), so
the group's charge climbs as the workers read, up to the same 320 MiB limit.  The
kernel then kills the process with the most RSS, and copying on write raises no
process's RSS: the training process, which mapped torch's libraries, holds the most.
It dies by SIGKILL with no Python traceback and no word from PyTorch; a shell says
"Killed".  This script starts the training loop (broken.py's, with the list built
in __init__) as a process of its own, to watch it from outside the limit.
"""
import json
import signal
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.memory_cgroup import memory_limit, run_limited
from _annotation_file import annotation_file

RECORDS = 100_000
LIMIT_MB = 320


class DetectionDataset(Dataset):
    def __init__(self, path):
        with open(path) as lines:
            # MYTH: built once, before the fork, and "shared": until the workers read it.
            self.records = [json.loads(line) for line in lines]
        self.count = len(self.records)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        record = self.records[index]
        return torch.tensor(record["boxes"][0]), len(record["labels"])


def train(path):
    with memory_limit(LIMIT_MB):
        loader = DataLoader(DetectionDataset(path), batch_size=256, num_workers=2,
                            multiprocessing_context="fork")
        objects = 0
        for first_boxes, label_counts in loader:
            objects += int(label_counts.sum())
        print(f"read {len(loader.dataset)} records, {objects} annotated objects, "
              f"within the {LIMIT_MB} MiB limit")


def main():
    if sys.argv[1:2] == ["--train"]:
        return train(sys.argv[2])
    with annotation_file(RECORDS) as path:
        code = run_limited(LIMIT_MB, [sys.executable, __file__, "--train", path])
    print(f"metric training_exit_code={code}")
    if code == -signal.SIGKILL:
        sys.exit("the training process itself was killed by SIGKILL, with no traceback and no "
                 "DataLoader message: the workers' copies made the charge, it had the most RSS")
    print(f"the training process ended with exit code {code}")


if __name__ == "__main__":
    main()
