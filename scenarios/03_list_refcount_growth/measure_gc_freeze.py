"""Scenario 03, measure: what one full garbage collection in a worker copies, without and with gc.freeze().

    python scenarios/03_list_refcount_growth/measure_gc_freeze.py

fixed.py's packed records, read by two forked workers; each worker runs one full
collection, as Python starts one by itself once enough objects have survived its
younger ones, and reads its own private memory (USS) before and after.  Without
gc.freeze(): the collection walks every tracked object the worker inherited
(torch's, numpy's, this script's) and writes to each one's header, so it copies
their pages, tens of MB in a worker whose records cost it nothing.  With the main
process's objects frozen before the workers fork: next to nothing.  This is why
broken.py and fixed.py freeze: when Python's own full collection comes depends on
allocation counts, inside the epoch on one machine and after it on another, and
their growth figures are about what reading copies.
"""
import gc

import psutil
from torch.utils.data import DataLoader

import fixed
from scenarios.instruments import process_memory_mb

RECORDS = fixed.IMAGES // 10


class CollectingDataset(fixed.DetectionDataset):
    def __getitem__(self, index):
        before = process_memory_mb(psutil.Process())[0]
        gc.collect()
        return process_memory_mb(psutil.Process())[0] - before


def copied_by_first_collection(dataset):
    """The most a worker's first full collection copied, over the two workers."""
    loader = DataLoader(dataset, batch_size=1, num_workers=2, prefetch_factor=1,
                        multiprocessing_context="fork")
    copied = []
    for sample in loader:  # one sample per worker: each one's first collection
        copied.append(float(sample))
        if len(copied) == loader.num_workers:
            break
    return max(copied)


def main():
    dataset = CollectingDataset(RECORDS)
    unfrozen = copied_by_first_collection(dataset)
    gc.freeze()
    frozen = copied_by_first_collection(dataset)
    print(f"a worker's first full collection copied {unfrozen:.1f} MB of what it inherited; "
          f"{frozen:.1f} MB once the main process had frozen its objects ({gc.get_freeze_count():,} of them)")
    print(f"metric unfrozen_collection_copied_mb={unfrozen:.1f}")
    print(f"metric frozen_collection_copied_mb={frozen:.1f}")


if __name__ == "__main__":
    main()
