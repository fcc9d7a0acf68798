"""Replaces the lambda with a top-level function, standardize_with_stats, that reads the mean and
std from module globals which main() sets. The function now pickles, by name; the globals do not
travel with it: each spawned worker imports the script afresh, where main() never ran, and finds
the stats unset. The error moves from pickling the dataset to the first batch in a worker: the
transform's name fixed, its parameters left behind: half a fix.
"""
import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES = 1024
EPOCHS = 2
MEAN = STD = None  # set by main() once the readings are known


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


def standardize_with_stats(row):
    return standardize(row, MEAN, STD)


def main():
    global MEAN, STD
    raw = SensorReadings(SAMPLES)
    MEAN, STD = raw.readings.mean(dim=0), raw.readings.std(dim=0)
    # A top-level function has a name pickle can send.
    dataset = SensorReadings(SAMPLES, transform=standardize_with_stats)
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
