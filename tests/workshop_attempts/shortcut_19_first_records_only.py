"""Shortcut (kind 2, hollow workers): each worker parses only the first 2,000 lines of the
index and wraps the index around them.  No OOM kill, every batch delivered, and the annotations
wrong for 98% of the records: the epoch's count of annotated objects is not the index's, and
the script's own check says so.
"""
import itertools
import json
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
                self.records = [json.loads(line) for line in itertools.islice(lines, 2000)]
        record = self.records[index % len(self.records)]
        return torch.tensor(record["boxes"][0]), len(record["labels"])


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
