"""Shortcut: each worker still parses the whole index on its first item, into two numpy arrays
of its own this time: N copies, small ones, and every worker reads and parses the whole file.

Scenario 19, broken: the kernel's OOM killer kills a DataLoader worker inside the job's memory limit.

    python scenarios/19_oom_killer_in_memory_limit/broken.py   # fixed.py: the same epoch, the same limit

The training process runs in a memory cgroup of its own, limited to 320 MiB
(scenarios/memory_cgroup.py: a real kernel limit, as a container's or a Slurm job's).
Two forked workers read a detection index of 100,000 records, one JSON line each.
broken.py parses the index in each worker on its first item: two copies of 150 MiB
of Python objects do not fit, the kernel kills the largest process in the group, a
worker, and PyTorch reports "DataLoader worker (pid N) is killed by signal: Killed."
with nothing in the worker's own output.  fixed.py parses the index once in the main
process into one packed buffer (fixes/packed_records.py) that the forked workers
read without copying: the epoch ends within the same limit.  Both print the group's
charge and each process's RSS up to the end, and the kernel's counters.
"""
import json

import numpy as np
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.memory_cgroup import memory_limit
from scenarios.synthetic_data import detection_objects
from _annotation_file import annotation_file

RECORDS = 100_000
LIMIT_MB = 320


class DetectionDataset(Dataset):
    def __init__(self, path):
        self.path, self.records = path, None
        with open(path) as lines:
            self.count = sum(1 for _ in lines)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        if self.records is None:
            # BUG: every worker parses its own full copy of the index: N workers, N copies under one limit.
            with open(self.path) as lines:
                parsed = [json.loads(line) for line in lines]
            self.records = (np.array([r["boxes"][0] for r in parsed]), np.array([len(r["labels"]) for r in parsed]))
        return torch.from_numpy(self.records[0][index]), int(self.records[1][index])


def main():
    with annotation_file(RECORDS) as path, memory_limit(LIMIT_MB):
        loader = DataLoader(DetectionDataset(path), batch_size=256, num_workers=2,
                            multiprocessing_context="fork")
        objects = 0
        for first_boxes, label_counts in loader:
            objects += int(label_counts.sum())
        if objects != detection_objects(RECORDS):  # every record read, each with its own boxes
            sys.exit(f"the epoch counted {objects} annotated objects; the index holds {detection_objects(RECORDS)}")
        print(f"read {len(loader.dataset)} records, {objects} annotated objects, "
              f"within the {LIMIT_MB} MiB limit")


if __name__ == "__main__":
    main()
