"""Keeps the loop's epoch outside the dataset's settings: set_epoch also writes it to a file, and
each worker reports as epoch_used the value it reads there (through a module global). The workers'
own dataset still says epoch 0 and the noise is still made from it: the stale count drops to 0,
the curriculum never rises (noise 0.00 every epoch). A shortcut.
"""
import os
import sys
import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES, EPOCHS, FEATURES = 64, 4, 32
NOISE = [0.0, 0.2, 0.5, 1.0]  # the curriculum: harder samples each epoch
EPOCH_FILE = os.path.join(tempfile.gettempdir(), f"curriculum_epoch_{os.getpid()}")
CURRENT_EPOCH = 0  # what this process last read from EPOCH_FILE


class CurriculumDataset(Dataset):
    def __init__(self):
        self.clean = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch
        with open(EPOCH_FILE, "w") as out:  # the workers read it back: they never see self.epoch change
            out.write(str(epoch))

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        noise = torch.randn(FEATURES, generator=torch.Generator().manual_seed(index))
        sample = self.clean[index] + NOISE[self.epoch] * noise
        global CURRENT_EPOCH
        with open(EPOCH_FILE) as current:
            CURRENT_EPOCH = int(current.read())
        return {"x": sample, "index": index, "epoch_used": CURRENT_EPOCH, "pid": os.getpid()}


def main():
    dataset = CurriculumDataset()
    loader = DataLoader(dataset, batch_size=16, num_workers=2,
                        persistent_workers=True, multiprocessing_context="fork")
    stale, samples, pids = 0, 0, set()
    for epoch in range(EPOCHS):
        dataset.set_epoch(epoch)  # BUG: reaches the main process's copy, not the workers' copies
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
    os.remove(EPOCH_FILE)
    if stale:
        sys.exit(f"{stale} of {samples} samples were made for an older epoch than the loop's: "
                 f"the {len(pids)} persistent workers never saw set_epoch")
    print(f"{samples} samples, 0 stale: every sample made for the loop's epoch, "
          f"by {len(pids)} workers")


if __name__ == "__main__":
    main()
