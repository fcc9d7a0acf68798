"""Scenario 10, the prediction checked: peak memory over a grid of loader settings.

    python scenarios/10_prefetch_memory/measure_grid.py

For num_workers x prefetch_factor x batch size, it predicts what a loader adds
(fixes/memory_in_flight.py: num_workers x prefetch_factor + 2 batches in flight, plus each
worker's own memory) and measures it (main + workers + /dev/shm, sampled while broken.py's
loop runs).  Expect every measured peak between about 0.6 and 1.0 of its prediction, at
most num_workers x prefetch_factor + 2 batches in /dev/shm at once, and more memory than
the num_workers x prefetch_factor batches that "A deep dive into PyTorch DataLoader with
Multiprocessing" counts.
"""
import itertools
import sys
import time

from torch.utils.data import DataLoader, Subset, default_collate

from broken import CropDataset
from fixes.memory_in_flight import batch_nbytes, batches_in_flight, predicted_peak_bytes
from scenarios.instruments import MIB, LoaderMemoryWatch

STEPS = 30  # enough for the workers to fill every prefetch slot
GRID = itertools.product([1, 2], [1, 8], [8, 32])  # num_workers, prefetch_factor, batch_size


def measure(dataset, workers, prefetch, batch_size):
    """(bytes the loader added at its peak, most bytes it held in /dev/shm at once)."""
    loader = DataLoader(Subset(dataset, range(STEPS * batch_size)), batch_size=batch_size,
                        num_workers=workers, prefetch_factor=prefetch,
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch()
    for images, labels in loader:
        time.sleep(0.05)  # the training step
    return watch.stop(), watch.peak_shm_bytes


def main():
    dataset, ratios, counts, short_counts = CropDataset(), [], [], []
    for workers, prefetch, batch_size in GRID:
        batch = batch_nbytes(default_collate([dataset[i] for i in range(batch_size)]))
        predicted = predicted_peak_bytes(batch, workers, prefetch) / MIB
        grown, in_shm = measure(dataset, workers, prefetch, batch_size)
        measured, batches = grown / MIB, in_shm / batch
        ratios.append(measured / predicted)
        counts.append(batches / batches_in_flight(workers, prefetch))
        short_counts.append(measured / (workers * prefetch * batch / MIB))
        name = f"w{workers}_p{prefetch}_b{batch_size}"
        print(f"metric predicted_peak_mb_{name}={predicted:.1f}")
        print(f"metric measured_peak_mb_{name}={measured:.1f}")
        print(f"metric shm_batches_{name}={batches:.2f}")
        print(f"{workers} workers x prefetch_factor {prefetch}, batches of {batch_size} ({batch / MIB:.2f} MiB): "
              f"{batches:5.2f} batches in /dev/shm at most (formula {batches_in_flight(workers, prefetch)}); "
              f"predicted {predicted:6.1f} MiB, measured {measured:6.1f} MiB")
    print(f"metric lowest_ratio={min(ratios):.2f}")
    print(f"metric highest_ratio={max(ratios):.2f}")
    print(f"metric highest_shm_count_ratio={max(counts):.3f}")
    print(f"metric workers_x_prefetch_lowest_ratio={min(short_counts):.2f}")
    if max(ratios) > 1.05 or max(counts) > 1.02:
        sys.exit(f"a measurement exceeded its prediction (memory by {max(ratios) - 1:.0%}, batches in "
                 f"/dev/shm by {max(counts) - 1:.0%}): fix the count or WORKER_OVERHEAD_MB in "
                 "fixes/memory_in_flight.py")
    print(f"measured / predicted: {min(ratios):.2f} to {max(ratios):.2f}; "
          f"batches in /dev/shm / formula: at most {max(counts):.3f}")


if __name__ == "__main__":
    main()
