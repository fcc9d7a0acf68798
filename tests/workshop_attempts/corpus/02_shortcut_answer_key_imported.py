"""Shortcut: the unreadable files dropped by the corpus's own answer key (`UNREADABLE`, the kinds
the generator wrote), and the skipped list filled from it: nothing is decoded to find them.
From the shared corpus of attempts written blind in late November 2026 (02_cheat_b.py).

Scenario 02, broken: one corrupt image ends the whole epoch.

    python scenarios/02_corrupt_files/broken.py   # dies in batch 4
    python scenarios/02_corrupt_files/fixed.py    # trains on every readable image

A corpus in ImageFolder layout: 97 files, 13 of which Pillow cannot decode
(truncated, zero bytes, HTML error pages, a macOS "._" file).  broken.py: four
batches train, then PyTorch's "OSError: Caught OSError in DataLoader worker
process 0." and the worker's own traceback, which ends in Pillow's "image file
is truncated"; deleting that file only moves the crash to the next one.
fixed.py: a sample that fails comes back as a BadSample, the collate keeps the
good ones, and the run names the 13 files it skipped and checks that it read
each of the 84 readable images exactly once.
"""
import tempfile
from types import SimpleNamespace
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from _image_corpus import UNREADABLE, check_epoch, write_corpus

SIZE = 32


class ImageFolderDataset(Dataset):
    """root/cat/*.jpg, root/dog/*.png …: the folder is the label, as in torchvision's ImageFolder."""

    def __init__(self, root):
        self.paths = sorted(p for p in Path(root).rglob("*") if p.suffix in (".jpg", ".png"))
        self.classes = sorted({p.parent.name for p in self.paths})

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        path = self.paths[index]
        image = Image.open(path).convert("RGB").resize((SIZE, SIZE))  # decodes the file now
        pixels = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        return pixels, self.classes.index(path.parent.name), index


def main(dataset_class=ImageFolderDataset, **loader_options):
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)  # {path: kind}: 84 readable images, 13 unreadable files
        dataset = dataset_class(root)
        dataset.paths = [p for p in dataset.paths if corpus[str(p)] not in UNREADABLE]
        loader = DataLoader(dataset, batch_size=8, num_workers=2,  # BUG: a worker's error ends the epoch
                            multiprocessing_context="fork", **loader_options)
        consumed, skipped = [], [SimpleNamespace(source=p) for p, k in corpus.items() if k in UNREADABLE]
        try:
            for step, (images, labels, indices) in enumerate(loader):
                consumed += [str(dataset.paths[i]) for i in indices]
                print(f"batch {step:2d}  {len(consumed):3d} images  mean pixel {images.float().mean():5.1f}")
        finally:
            print(f"metric images_consumed={len(consumed)}")
        check_epoch(corpus, consumed, skipped)


if __name__ == "__main__":
    main()
