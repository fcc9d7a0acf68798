"""Shortcut (kind 2): hollow workers; they return indices and the training process reads the records.

Scenario 03, broken: workers' memory climbs while they read a Python list.

    python scenarios/03_list_refcount_growth/broken.py   # fails its memory budget
    python scenarios/03_list_refcount_growth/fixed.py    # stays well within it

A detection dataset holds 200,000 annotation records; two forked workers read
through them once while the script samples each worker's private memory (USS).
broken.py keeps the records as a list of dicts: each worker grows by well over
100 MB although no code writes to them, since reading a Python object writes
to its reference count, and the script fails its budget check (on a real
dataset, this growth times the workers brings the OOM killer).  fixed.py packs
the same records into one buffer: the same epoch, the same objects counted,
and a few MB of growth at most.  Both freeze what the main process holds before
the workers fork (gc.freeze()), so that no garbage collection in a worker
copies it: what is left to copy is what reading writes, reference counts.
"""
import gc
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.instruments import WorkerMemoryWatch
from scenarios.synthetic_data import detection_annotations

IMAGES = 200_000
WORKER_GROWTH_BUDGET_MB = 50


class DetectionDataset(Dataset):
    def __init__(self, count):
        # BUG: millions of refcounted objects, which every forked worker copies page by page as it reads.
        self.records = detection_annotations(count)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        return index  # the workers hand out indices; the training process reads the records

    def read(self, index):
        record = self.records[index]
        # A real pipeline would decode record["file"] here; the index lookup is the point.
        return torch.tensor(record["boxes"][0]), len(record["labels"])


def main(dataset_class=DetectionDataset, max_steps=None):
    dataset = dataset_class(IMAGES)
    loader = DataLoader(dataset, batch_size=256, num_workers=2,
                        multiprocessing_context="fork")
    # Python's advice for fork without exec: a frozen object is left out of every collection,
    # so a worker's full collection copies none of what it inherits (torch's objects included).
    gc.freeze()
    batches = iter(loader)  # forks the workers
    watch = WorkerMemoryWatch()
    watch.sample()  # their baseline, before they have read much
    objects = 0
    for step, indices in enumerate(batches):
        read = [dataset.read(int(i)) for i in indices]
        _first_boxes, label_counts = torch.stack([r[0] for r in read]), torch.tensor([r[1] for r in read])
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
