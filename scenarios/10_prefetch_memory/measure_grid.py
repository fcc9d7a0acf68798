"""Scenario 10, the prediction checked: peak memory over a grid of loader settings.

    python scenarios/10_prefetch_memory/measure_grid.py

For num_workers x prefetch_factor x batch size, it predicts the memory a loader
adds (fixes/memory_budget.py: batches in /dev/shm + each worker's own) and
measures it (main + workers + /dev/shm, sampled while broken.py's loop runs).
Expect every measured peak between about 0.6 and 1.0 of its prediction, and
above what seed 002's count (num_workers x prefetch_factor batches) gives.
"""
import itertools
import sys
import time

from torch.utils.data import DataLoader, Subset, default_collate

from broken import CropDataset
from fixes.memory_budget import predicted_peak_bytes
from fixes.shm_budget import batch_nbytes
from scenarios.instruments import MIB, LoaderMemoryWatch

STEPS = 30  # enough for the workers to fill every prefetch slot
GRID = itertools.product([1, 2], [1, 8], [8, 32])  # num_workers, prefetch_factor, batch_size


def measure(dataset, workers, prefetch, batch_size):
    loader = DataLoader(Subset(dataset, range(STEPS * batch_size)), batch_size=batch_size,
                        num_workers=workers, prefetch_factor=prefetch,
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch()
    for images, labels in loader:
        time.sleep(0.05)  # the training step
    return watch.stop()


def main():
    dataset, ratios, seed_ratios = CropDataset(), [], []
    for workers, prefetch, batch_size in GRID:
        batch = batch_nbytes(default_collate([dataset[i] for i in range(batch_size)]))
        predicted = predicted_peak_bytes(batch, workers, prefetch) / MIB
        measured = measure(dataset, workers, prefetch, batch_size) / MIB
        ratios.append(measured / predicted)
        seed_ratios.append(measured / (workers * prefetch * batch / MIB))  # seed 002's count
        name = f"w{workers}_p{prefetch}_b{batch_size}"
        print(f"metric predicted_peak_mb_{name}={predicted:.1f}")
        print(f"metric measured_peak_mb_{name}={measured:.1f}")
        print(f"{workers} workers x prefetch_factor {prefetch}, batches of {batch_size} "
              f"({batch / MIB:.2f} MiB): predicted {predicted:6.1f} MiB, measured {measured:6.1f} MiB")
    print(f"metric lowest_ratio={min(ratios):.2f}")
    print(f"metric highest_ratio={max(ratios):.2f}")
    print(f"metric seed_formula_lowest_ratio={min(seed_ratios):.2f}")
    if max(ratios) > 1.05:
        sys.exit(f"a measured peak exceeded its prediction by {max(ratios) - 1:.0%}: "
                 "raise WORKER_OVERHEAD_MB in fixes/memory_budget.py")
    print(f"measured / predicted: {min(ratios):.2f} to {max(ratios):.2f}")


if __name__ == "__main__":
    main()
