"""Scenario 10, myth check: does gc.collect() in __getitem__ release the memory in flight?

    python scenarios/10_prefetch_memory/myth_gc_collect.py

"A deep dive into PyTorch DataLoader with Multiprocessing" blames the climb on workers that
"load faster than they release" and adds gc.collect() at the top of __getitem__.  This runs
broken.py's loader (2 workers x prefetch_factor 16) for a few batches without it and with
it, and measures what the collections free, what they cost, and the loader's memory.
It exits 0 only if the advice held (the collections freed objects and the loader's peak
dropped); expect it to fail: the batches are freed by reference counting, not by the
collector, so it frees nothing, each sample takes tens of ms longer, and each worker grows.
"""
import gc
import sys
import time

import torch
from torch.utils.data import DataLoader, Subset, get_worker_info

from broken import BATCH, CropDataset
from scenarios.instruments import MIB, LoaderMemoryWatch

STEPS = 2  # one batch per worker: a collection takes tens of ms, an epoch would take minutes


class CollectingCropDataset(CropDataset):
    def __init__(self):
        # Per worker: calls, objects freed by the first call, by the others, seconds in gc.
        self.found = torch.zeros(2, 4, dtype=torch.float64).share_memory_()

    def __getitem__(self, index):
        started = time.perf_counter()
        freed = gc.collect()  # MYTH: collecting here releases the batches the workers hold
        row = self.found[get_worker_info().id]
        row += torch.tensor([1, freed if row[0] == 0 else 0, freed if row[0] > 0 else 0,
                             time.perf_counter() - started], dtype=torch.float64)
        return super().__getitem__(index)


def measure(dataset):
    loader = DataLoader(Subset(dataset, range(STEPS * BATCH)), batch_size=BATCH, num_workers=2,
                        prefetch_factor=16, multiprocessing_context="fork")
    watch = LoaderMemoryWatch()
    started = time.perf_counter()
    for images, labels in loader:
        time.sleep(0.05)  # the training step
    seconds = time.perf_counter() - started
    return seconds / STEPS, watch.stop() / MIB, watch.peak_worker_bytes / MIB


def main():
    plain_s, plain_peak, plain_worker = measure(CropDataset())
    collecting = CollectingCropDataset()
    gc_s_batch, gc_peak, gc_worker = measure(collecting)
    calls, freed_first, freed_later, gc_s = collecting.found.sum(0).tolist()
    print(f"metric gc_calls={calls:.0f}")
    print(f"metric gc_objects_freed_first_call={freed_first:.0f}")
    print(f"metric gc_objects_freed_later_calls={freed_later:.0f}")
    print(f"metric gc_ms_per_call={gc_s / calls * 1000:.1f}")
    print(f"metric plain_s_per_batch={plain_s:.3f}")
    print(f"metric gc_s_per_batch={gc_s_batch:.3f}")
    print(f"metric plain_measured_peak_mb={plain_peak:.1f}")
    print(f"metric gc_measured_peak_mb={gc_peak:.1f}")
    print(f"metric plain_worker_peak_mb={plain_worker:.1f}")
    print(f"metric gc_worker_peak_mb={gc_worker:.1f}")
    summary = (f"gc.collect() freed {freed_later:.0f} objects in {calls - 2:.0f} calls after each worker's "
               f"first, cost {gc_s / calls * 1000:.0f} ms a call ({gc_s_batch:.2f} s a batch instead of "
               f"{plain_s:.2f} s); the loader peaked at {gc_peak:.0f} MiB with it, {plain_peak:.0f} MiB "
               f"without, each worker at {gc_worker:.0f} MiB instead of {plain_worker:.0f} MiB")
    if freed_later > 0 and gc_peak < plain_peak:
        print(f"the advice held: {summary}")
    else:
        sys.exit(summary)


if __name__ == "__main__":
    main()
