"""Scenario 09, broken: a lambda transform cannot be sent to spawned workers.

    python scenarios/09_spawn_pitfalls/broken.py

Expect, before the first batch:
    AttributeError: Can't pickle local object 'main.<locals>.<lambda>'
With fork (Linux's default start method before Python 3.14) the same script
runs; with spawn (the default on macOS and Windows, and the usual cure for
fork's problems) every worker receives the dataset by pickle, and a lambda
or a function defined inside another function cannot be pickled.
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


def main():
    raw = SensorReadings(SAMPLES)
    mean, std = raw.readings.mean(dim=0), raw.readings.std(dim=0)
    # BUG: a lambda made inside main() has no importable name, so spawn cannot
    # pickle it into the workers; fork never needed to.
    dataset = SensorReadings(SAMPLES, transform=lambda row: (row - mean) / std)
    loader = DataLoader(dataset, batch_size=64, num_workers=2, persistent_workers=True,
                        multiprocessing_context="spawn")
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
