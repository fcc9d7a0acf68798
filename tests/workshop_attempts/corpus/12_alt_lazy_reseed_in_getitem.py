"""Reseeds the dataset's generator the first time __getitem__ runs in a process, from the worker's
seed that PyTorch draws anew each epoch. A fix.
"""
import sys
from collections import Counter

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

IMAGES, SIDE, CROP = 128, 40, 32


class RandomCropFlip(Dataset):
    """Random crop, horizontal flip and brightness jitter, as a torchvision-style pipeline does."""

    def __init__(self, count):
        self.images = torch.rand(count, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(0))
        self.rng = np.random.default_rng(0)  # BUG: every worker gets a copy of this very state

    def __len__(self):
        return len(self.images)

    def draw(self):
        info = torch.utils.data.get_worker_info()
        if info is not None and getattr(self, "seeded_for", None) != info.seed:
            self.rng, self.seeded_for = np.random.default_rng(info.seed), info.seed
        top, left = self.rng.integers(0, SIDE - CROP + 1, size=2)
        return int(top), int(left), int(self.rng.random() < 0.5), float(self.rng.uniform(0.8, 1.2))

    def __getitem__(self, index):
        top, left, flip, brightness = params = self.draw()
        image = self.images[index, :, top:top + CROP, left:left + CROP]
        image = image.flip(-1) if flip else image
        return image * brightness, torch.tensor(params, dtype=torch.float64)


def main(dataset_class=RandomCropFlip, epochs=2, num_workers=2, context="fork", **loader_options):
    loader = DataLoader(dataset_class(IMAGES), batch_size=8, num_workers=num_workers,
                        multiprocessing_context=context, **loader_options)
    draws = []  # per epoch: one (top, left, flip, brightness) per sample
    for epoch in range(epochs):
        draws.append([tuple(row) for _, params in loader for row in params.tolist()])
        for batch in range(num_workers):  # batches are dealt to the workers in turn
            top, left, flip, brightness = draws[epoch][8 * batch]
            print(f"epoch {epoch} batch {batch}: first sample cropped at ({top:.0f}, {left:.0f}), "
                  f"flip={flip:.0f}, brightness x{brightness:.4f}")
    duplicated = sum(n for counts in map(Counter, draws) for n in counts.values() if n > 1)
    replayed = sum(draw in set(draws[0]) for draw in draws[1]) if epochs > 1 else None
    print(f"metric distinct_draws={len(set(draws[0]))}")
    print(f"metric duplicated_draws={duplicated}")
    found = f"{duplicated} of {epochs * IMAGES} augmentation draws were also drawn for another sample of the same epoch"
    if replayed is not None:
        print(f"metric replayed_draws={replayed}")
        found += f", {replayed} of {IMAGES} repeat the previous epoch"
    if duplicated or replayed:
        sys.exit(found + " (by chance: 0)")
    print(f"all {epochs * IMAGES} augmentation draws differ, within each epoch and from one epoch to the next")


if __name__ == "__main__":
    main()
