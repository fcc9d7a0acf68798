"""Parses the index once in __init__, line by line, keeping only the two fields __getitem__ returns,
in numpy arrays: no Python object per record for the workers to copy. A fix.
"""
import json
import sys

import numpy as np

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.memory_cgroup import memory_limit
from scenarios.synthetic_data import detection_objects
from _annotation_file import annotation_file

RECORDS = 100_000
LIMIT_MB = 320


class DetectionDataset(Dataset):
    def __init__(self, path):
        # parsed once, before the fork; only what __getitem__ needs, as flat arrays
        first_boxes, label_counts = [], []
        with open(path) as lines:
            for line in lines:
                record = json.loads(line)
                first_boxes.append(record["boxes"][0])
                label_counts.append(len(record["labels"]))
        self.first_boxes = np.array(first_boxes)
        self.label_counts = np.array(label_counts)
        self.count = len(self.label_counts)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.from_numpy(self.first_boxes[index]), int(self.label_counts[index])


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
