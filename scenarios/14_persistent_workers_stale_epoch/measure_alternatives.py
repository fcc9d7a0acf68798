"""Scenario 14, measure: the other ways out, new workers every epoch and a shared value.

    python scenarios/14_persistent_workers_stale_epoch/measure_alternatives.py
    python scenarios/14_persistent_workers_stale_epoch/measure_alternatives.py forkserver

Runs broken.py's dataset and loop in five loaders: persistent workers
(broken.py); persistent workers with the epoch in the indices (fixed.py);
persistent workers reading the epoch from a multiprocessing.Value that the
loop writes; new workers every epoch (persistent_workers=False: each new
worker copies the dataset as it is then, epoch included, and the workers are
started again every epoch); and num_workers=0.  Workers start by fork
(Linux's default up to Python 3.13) unless a start method is given.  For each:
the median over epochs 1-3 (epoch 0 starts workers in every loader) of the time
to the first batch and of the whole epoch, the processes that made samples, and
the samples made for an older epoch than the loop's.
"""
import multiprocessing
import statistics
import sys
import time

from torch.utils.data import DataLoader

from broken import EPOCHS, CurriculumDataset
from fixes.epoch_in_indices import EpochInIndices

START_METHOD = sys.argv[1] if len(sys.argv) > 1 else "fork"


class SharedEpochDataset(CurriculumDataset):
    """The epoch in shared memory: made before the workers start, written by the loop."""

    def __init__(self):
        super().__init__()
        self.shared_epoch = multiprocessing.get_context(START_METHOD).Value("i", 0)

    def set_epoch(self, epoch):
        self.shared_epoch.value = epoch

    def __getitem__(self, index):
        self.epoch = self.shared_epoch.value
        return super().__getitem__(index)


def run(dataset, num_workers=2, **loader_options):
    if num_workers:
        loader_options["multiprocessing_context"] = START_METHOD
    loader = DataLoader(dataset, batch_size=16, num_workers=num_workers, **loader_options)
    first_batch_s, epoch_s, stale, pids = [], [], 0, set()
    for epoch in range(EPOCHS):
        dataset.set_epoch(epoch)
        started = time.perf_counter()
        for step, batch in enumerate(loader):
            if step == 0:
                first_batch_s.append(time.perf_counter() - started)
            stale += int((batch["epoch_used"] != epoch).sum())
            pids |= set(batch["pid"].tolist())
        epoch_s.append(time.perf_counter() - started)
    return {"first_batch_ms": 1000 * statistics.median(first_batch_s[1:]),
            "epoch_ms": 1000 * statistics.median(epoch_s[1:]),
            "processes": len(pids), "stale_samples": stale}


def main():
    fixed = EpochInIndices(CurriculumDataset())
    runs = {"persistent": run(CurriculumDataset(), persistent_workers=True),
            "fixed": run(fixed, sampler=fixed.sampler(), persistent_workers=True),
            "shared_value": run(SharedEpochDataset(), persistent_workers=True),
            "restart": run(CurriculumDataset(), persistent_workers=False),
            "no_workers": run(CurriculumDataset(), num_workers=0)}
    print(f"start method {START_METHOD}, {EPOCHS} epochs of {len(fixed)} samples")
    for name, figures in runs.items():
        print(f"{name:>12}: first batch {figures['first_batch_ms']:6.1f} ms, epoch "
              f"{figures['epoch_ms']:6.1f} ms, {figures['stale_samples']:3d} stale samples, "
              f"made by {figures['processes']} process{'es' if figures['processes'] > 1 else ''}")
        for key, value in figures.items():
            print(f"metric {name}_{key}={value:.1f}" if isinstance(value, float) else
                  f"metric {name}_{key}={value}")
    cost = runs["restart"]["epoch_ms"] - runs["fixed"]["epoch_ms"]
    print(f"metric restart_cost_ms_per_epoch={cost:.1f}")
    print(f"new workers each epoch: {runs['restart']['processes']} worker processes for "
          f"{EPOCHS} epochs, {cost:.0f} ms more per epoch than persistent workers with the fix")


if __name__ == "__main__":
    main()
