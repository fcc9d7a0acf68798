"""Scenario 03, myth check: does gc.collect() in __getitem__ stop the growth?

    python scenarios/03_list_refcount_growth/myth_gc_collect.py

"A deep dive into PyTorch DataLoader with Multiprocessing" advises collecting
garbage in __getitem__.  A full collection walks every tracked object (here
about 1.7 million) and writes to each one's GC header, so a worker copies
those pages at its first sample instead of gradually.  It is also slow: this
reads only 4 samples, one at a time with one in flight per worker, and projects
the epoch.
"""
import gc
import sys
import time

from torch.utils.data import DataLoader

from broken import IMAGES, WORKER_GROWTH_BUDGET_MB, DetectionDataset
from scenarios.instruments import WorkerMemoryWatch

SAMPLES = 4


class CollectingDetectionDataset(DetectionDataset):
    def __getitem__(self, index):
        started = time.perf_counter()
        gc.collect()  # MYTH: collecting garbage here keeps the worker's memory down.
        # The time the collection took rides along with the sample, to be measured in main.
        return super().__getitem__(index), time.perf_counter() - started


def main():
    loader = DataLoader(CollectingDetectionDataset(IMAGES), batch_size=1, num_workers=2,
                        prefetch_factor=1, multiprocessing_context="fork")
    batches = iter(loader)
    watch = WorkerMemoryWatch()
    watch.sample()
    collect_s = []
    for _sample, seconds in batches:
        watch.sample()
        collect_s += seconds.tolist()
        if len(collect_s) >= SAMPLES:
            break
    growth = watch.growth_mb()
    per_sample_s = sum(collect_s) / len(collect_s)
    print(f"metric worker_uss_growth_mb={growth:.1f}")
    print(f"metric ms_per_sample={per_sample_s * 1000:.1f}")
    epoch_hours = per_sample_s * IMAGES / loader.num_workers / 3600
    print(f"gc.collect() took {per_sample_s * 1000:.0f} ms per sample: one epoch of {IMAGES} samples "
          f"on {loader.num_workers} workers would spend {epoch_hours:.1f} hours in it")
    if growth > WORKER_GROWTH_BUDGET_MB:
        sys.exit(f"worker memory grew {growth:.0f} MB within {SAMPLES} samples "
                 f"(budget {WORKER_GROWTH_BUDGET_MB} MB): gc.collect() copied the objects' pages")


if __name__ == "__main__":
    main()
