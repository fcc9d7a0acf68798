"""Scenario 02, fixed: unreadable files are skipped, counted and named.

    python scenarios/02_corrupt_files/fixed.py

Expect: the epoch runs to its end.  A sample that fails comes back from its
worker as a BadSample marker; the collate keeps the good samples of each batch
and survives the one that holds none.  The run lists the 13 files it skipped,
and why, and checks that it read each of the 84 readable images exactly once.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from fixes.bad_samples import SkipBadSamples, SkippedSamples, collate_good_samples, load_rgb
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
        image = load_rgb(path).resize((SIZE, SIZE))  # decodes now; any mode becomes RGB
        pixels = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        return pixels, self.classes.index(path.parent.name), index


def main(dataset_class=ImageFolderDataset, collate_fn=collate_good_samples):
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)  # {path: kind}: 84 readable images, 13 unreadable files
        dataset = dataset_class(root)
        # FIX: a sample that raises comes back as a BadSample (index, path, reason);
        # the collate keeps the good ones and SkippedSamples keeps the record.
        loader = DataLoader(SkipBadSamples(dataset, sources=dataset.paths), batch_size=8,
                            num_workers=2, collate_fn=collate_fn, multiprocessing_context="fork")
        consumed, skipped = [], SkippedSamples()
        try:
            for step, (images, labels, indices) in enumerate(skipped.good_batches(loader)):
                consumed += [str(dataset.paths[i]) for i in indices]
                print(f"batch {step:2d}  {len(consumed):3d} images  mean pixel {images.float().mean():5.1f}")
        finally:
            print(f"metric images_consumed={len(consumed)}")
        print(skipped.summary())
        named = {bad.source for bad in skipped.skipped}
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
