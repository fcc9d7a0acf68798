"""Moves the records into a numpy array, but of dtype=object: still one refcounted Python
object per record, so forked workers still copy pages as they read. Not a fix.
"""
import gc
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.instruments import WorkerMemoryWatch
from scenarios.synthetic_data import detection_annotations

IMAGES = 200_000
WORKER_GROWTH_BUDGET_MB = 50


class DetectionDataset(Dataset):
    def __init__(self, count):
        # BUG: millions of refcounted objects, which every forked worker copies page by page as it reads.
        self.records = np.array(detection_annotations(count), dtype=object)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        record = self.records[index]
        # A real pipeline would decode record["file"] here; the index lookup is the point.
        return torch.tensor(record["boxes"][0]), len(record["labels"])


def main(dataset_class=DetectionDataset, max_steps=None):
    loader = DataLoader(dataset_class(IMAGES), batch_size=256, num_workers=2,
                        multiprocessing_context="fork")
    # Python's advice for fork without exec: a frozen object is left out of every collection,
    # so a worker's full collection copies none of what it inherits (torch's objects included).
    gc.freeze()
    batches = iter(loader)  # forks the workers
    watch = WorkerMemoryWatch()
    watch.sample()  # their baseline, before they have read much
    objects = 0
    for step, (first_boxes, label_counts) in enumerate(batches):
        objects += int(label_counts.sum())
        if step % 25 == 0:
            watch.sample()
        if step == max_steps:
            break
    watch.sample()
    growth = watch.growth_mb()
    print(f"read {step + 1} batches, {objects} annotated objects")
    print(f"metric worker_uss_growth_mb={growth:.1f}")
    if growth > WORKER_GROWTH_BUDGET_MB:
        sys.exit(f"worker memory grew {growth:.0f} MB during the epoch "
                 f"(budget {WORKER_GROWTH_BUDGET_MB} MB): copy-on-read of the Python objects")
    print(f"worker memory grew {growth:.1f} MB, within the {WORKER_GROWTH_BUDGET_MB} MB budget")


if __name__ == "__main__":
    main()
