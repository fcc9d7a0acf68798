"""Scenario 02, broken: one corrupt image ends the whole epoch.

    python scenarios/02_corrupt_files/broken.py

Expect: four batches train, then the run dies with PyTorch's
"OSError: Caught OSError in DataLoader worker process 0." followed by the
worker's original traceback, which ends in Pillow's "image file is truncated".
The corpus holds 13 unreadable files: deleting this one moves the crash to the next.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from image_corpus import UNREADABLE, write_corpus

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
        # BUG: a file Pillow cannot decode raises here, in a worker; the DataLoader
        # re-raises it in the training loop, and nothing there expects it.
        image = Image.open(path).convert("RGB").resize((SIZE, SIZE))
        pixels = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        return pixels, self.classes.index(path.parent.name), index


def main(dataset_class=ImageFolderDataset, collate_fn=None):
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)  # {path: kind}: 84 readable images, 13 unreadable files
        dataset = dataset_class(root)
        loader = DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=collate_fn,
                            multiprocessing_context="fork")
        consumed, named = [], set()
        try:
            for step, (images, labels, indices) in enumerate(loader):
                consumed += [str(dataset.paths[i]) for i in indices]
                print(f"batch {step:2d}  {len(consumed):3d} images  mean pixel {images.float().mean():5.1f}")
        finally:
            print(f"metric images_consumed={len(consumed)}")
        good = sorted(path for path, kind in corpus.items() if kind not in UNREADABLE)
        unreadable = {path for path, kind in corpus.items() if kind in UNREADABLE}
        print(f"metric bad_files_named={len(named & unreadable)}")
        if sorted(consumed) != good or named != unreadable:
            sys.exit(f"consumed {len(consumed)} images ({len(set(consumed))} distinct) of {len(good)} "
                     f"readable; named {len(named & unreadable)} of {len(unreadable)} unreadable files")
        print(f"consumed each of the {len(good)} readable images once, "
              f"named all {len(unreadable)} unreadable files")


if __name__ == "__main__":
    main()
