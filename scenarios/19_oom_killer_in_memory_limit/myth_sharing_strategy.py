"""Scenario 19, myth: "set the sharing strategy to file_system" does not stop the OOM killer.

    python scenarios/19_oom_killer_in_memory_limit/broken.py   # fixed.py: the same epoch, the same limit

Forum answers to "DataLoader worker ... is killed by signal: Killed" often suggest
torch.multiprocessing.set_sharing_strategy("file_system").  It changes how batches
travel from workers to the main process (named files in /dev/shm instead of passed
descriptors), not how much memory the workers hold: this is broken.py with that one
line, under the same 320 MiB limit, and a worker is killed just the same.
"""
import json

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.memory_cgroup import memory_limit
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
            # As in broken.py: every worker parses its own full copy of the index.
            with open(self.path) as lines:
                self.records = [json.loads(line) for line in lines]
        record = self.records[index]
        return torch.tensor(record["boxes"][0]), len(record["labels"])


def main():
    # MYTH: another way to move batches between processes; the memory each worker holds stays.
    torch.multiprocessing.set_sharing_strategy("file_system")
    with annotation_file(RECORDS) as path, memory_limit(LIMIT_MB):
        loader = DataLoader(DetectionDataset(path), batch_size=256, num_workers=2,
                            multiprocessing_context="fork")
        objects = 0
        for first_boxes, label_counts in loader:
            objects += int(label_counts.sum())
        print(f"read {len(loader.dataset)} records, {objects} annotated objects, "
              f"within the {LIMIT_MB} MiB limit")


if __name__ == "__main__":
    main()
