"""Replaces the lambda with a def, but inside main(): a local function has no importable name
either, so pickle still cannot send it to spawned workers. Not a fix.
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
    def transform(row):  # a real function instead of the lambda
        return standardize(row, mean, std)

    dataset = SensorReadings(SAMPLES, transform=transform)
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
