"""Scenario 02, an attendee's fix that is not ours: failures come back as markers the loop records.

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
from collections import namedtuple
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, default_collate

from _image_corpus import check_epoch, write_corpus

SIZE = 32
Unreadable = namedtuple("Unreadable", "source error")


class ImageFolderDataset(Dataset):
    """root/cat/*.jpg, root/dog/*.png …: the folder is the label, as in torchvision's ImageFolder."""

    def __init__(self, root):
        self.paths = sorted(p for p in Path(root).rglob("*") if p.suffix in (".jpg", ".png"))
        self.classes = sorted({p.parent.name for p in self.paths})

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        path = self.paths[index]
        try:
            image = Image.open(path).convert("RGB").resize((SIZE, SIZE))  # decodes the file now
        except Exception as error:  # FIX: a file that fails comes back as a marker, to be counted
            return None, repr(error), index
        pixels = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        return pixels, self.classes.index(path.parent.name), index


def readable_and_not(samples):
    """The batch of the good samples, and the indices and errors of the others."""
    good = [sample for sample in samples if sample[0] is not None]
    bad = [(index, error) for image, error, index in samples if image is None]
    images, labels, indices = default_collate(good) if good else (
        torch.empty(0, 3, SIZE, SIZE, dtype=torch.uint8), torch.empty(0, dtype=torch.long),
        torch.empty(0, dtype=torch.long))
    return images, labels, indices, bad


def main(dataset_class=ImageFolderDataset, **loader_options):
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)  # {path: kind}: 84 readable images, 13 unreadable files
        dataset = dataset_class(root)
        loader = DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=readable_and_not,
                            multiprocessing_context="fork", **loader_options)
        consumed, skipped = [], []
        try:
            for step, (images, labels, indices, bad) in enumerate(loader):
                skipped += [Unreadable(str(dataset.paths[i]), error) for i, error in bad]
                if not len(indices):
                    continue
                consumed += [str(dataset.paths[i]) for i in indices]
                print(f"batch {step:2d}  {len(consumed):3d} images  mean pixel {images.float().mean():5.1f}")
        finally:
            print(f"metric images_consumed={len(consumed)}")
        for bad in skipped:
            print(f"skipped {Path(bad.source).name}: {bad.error}")
        check_epoch(corpus, consumed, skipped)


if __name__ == "__main__":
    main()
