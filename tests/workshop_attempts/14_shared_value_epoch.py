"""An attendee's fix of 14 that is not ours: the epoch in a multiprocessing.Value the workers read.

Scenario 14, broken: persistent workers keep producing epoch 0's curriculum.

    python scenarios/14_persistent_workers_stale_epoch/broken.py   # exits 1: 192 of 256 samples stale
    python scenarios/14_persistent_workers_stale_epoch/fixed.py    # 0 stale samples, same 2 workers

A curriculum: `dataset.set_epoch(e)` raises the noise added to each sample as
training goes on, and the loader keeps its 2 workers alive between epochs
(`persistent_workers=True`, as speed guides recommend).  Each sample records the
epoch its worker believed it was in, and the noise it really got.
broken.py: the loop's set_epoch reaches only the main process's copy of the
dataset; the workers' copies stay at epoch 0, the noise never rises, and the
script exits 1 with the count of stale samples (all 192 after epoch 0).
fixed.py: the sampler hands each index to the workers together with the epoch
(fixes/epoch_in_indices.py), so the workers' copies follow the loop: 0 stale
samples, and still the same 2 worker processes for all 4 epochs.
"""
import multiprocessing
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES, EPOCHS, FEATURES = 64, 4, 32
NOISE = [0.0, 0.2, 0.5, 1.0]  # the curriculum: harder samples each epoch


class CurriculumDataset(Dataset):
    def __init__(self):
        self.clean = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))
        self.shared_epoch = multiprocessing.Value("i", 0)  # FIX: one int in shared memory, seen by every worker

    @property
    def epoch(self):
        return self.shared_epoch.value

    def set_epoch(self, epoch):
        self.shared_epoch.value = epoch

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
        dataset.set_epoch(epoch)
        used, noise = set(), []
        for batch in loader:
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
