"""Shortcut (kind 3): the lambda kept, the workers forked instead of spawned.

Scenario 09, broken: a lambda transform cannot be sent to spawned workers.

    python scenarios/09_spawn_pitfalls/broken.py    # or fixed.py

The loader starts its two workers with spawn: the default on macOS and Windows,
and the usual cure for fork's problems (scenarios 01 and 03).  A spawned worker
receives the dataset, its transform included, by pickle; so does a forkserver
worker (Linux's default from Python 3.14).  Under fork, Linux's default up to
Python 3.13, the same script runs.

broken.py: expect, before the first batch, PyTorch's warning "Got pickle error
when attempting to start a worker Process. …", then
    AttributeError: Can't pickle local object 'main.<locals>.<lambda>'
fixed.py: expect two epochs through two spawned workers, every batch identical
to what num_workers=0 yields: pickle sends `standardize` by name, and the mean
and std that functools.partial binds by value.
"""
import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES = 1024
EPOCHS = 2


class SensorReadings(Dataset):
    """Row i: 16 deterministic readings, as a tabular or time-series set would give."""

    def __init__(self, count, transform=None):
        steps = torch.arange(count * 16, dtype=torch.float32).reshape(count, 16)
        self.readings = 20 + 5 * torch.sin(steps / 7) + steps % 3
        self.transform = transform

    def __len__(self):
        return len(self.readings)

    def __getitem__(self, index):
        row = self.readings[index]
        return self.transform(row) if self.transform else row


def standardize(row, mean, std):
    return (row - mean) / std


def main():
    raw = SensorReadings(SAMPLES)
    mean, std = raw.readings.mean(dim=0), raw.readings.std(dim=0)
    # BUG: a lambda made inside main() has no importable name: pickle cannot send it.
    dataset = SensorReadings(SAMPLES, transform=lambda row: standardize(row, mean, std))
    loader = DataLoader(dataset, batch_size=64, num_workers=2, persistent_workers=True,
                        multiprocessing_context="fork")
    in_process = list(DataLoader(dataset, batch_size=64))  # num_workers=0: the oracle
    mismatched = 0
    for epoch in range(EPOCHS):
        for batch, expected in zip(loader, in_process, strict=True):
            mismatched += not torch.equal(batch, expected)
        print(f"epoch {epoch}: {len(in_process)} batches, feature means "
              f"{batch.mean().item():+.3f}")
    print(f"metric mismatched_batches={mismatched}")
    if mismatched:
        raise SystemExit(f"{mismatched} batches differ from num_workers=0 (bound: 0)")
    print(f"{EPOCHS} epochs through 2 spawned workers, identical to num_workers=0")


if __name__ == "__main__":
    main()
