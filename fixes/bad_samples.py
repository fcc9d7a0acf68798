"""Turn a sample that cannot be loaded into a reported event instead of the end
of the epoch.  Fixes scenario 02 (corrupt files kill the epoch).

A DataLoader worker that raises in `__getitem__` sends the exception to the
main process, which re-raises it: one truncated JPEG among a million images
stops training.  The usual patches break elsewhere: `return None` makes
`default_collate` raise, and a collate that filters out the Nones raises
IndexError on a batch that held only bad samples.  The parts here, usable
separately:

    load_rgb(path)             decode the whole file now and convert any mode to
                               RGB (transparency composited onto a background)
    SkipBadSamples(dataset, sources=paths)
                               a failing sample comes back as a BadSample marker
                               (index, source, reason) instead of an exception
    collate_good_samples       collate_fn: collates the good samples of a batch,
                               carries the BadSamples along, survives empty batches
    SkippedSamples             in the training loop: yields the good batches,
                               records every skipped sample, refuses to go on
                               when too many fail (a wrong path or decoder would
                               otherwise "train" on nothing)
    scan_images(paths)         a pre-scan with the same decoder, before training;
                               also `python -m fixes.bad_samples DIR`

    loader = DataLoader(SkipBadSamples(dataset, sources=dataset.paths),
                        collate_fn=collate_good_samples, num_workers=4)
    skipped = SkippedSamples()
    for images, labels in skipped.good_batches(loader):
        ...
    print(skipped.summary())
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from PIL import Image
from torch.utils.data import Dataset, default_collate

# What a bad file raises: Pillow's UnidentifiedImageError and "image file is
# truncated" are OSErrors; some decoders raise ValueError, SyntaxError or
# EOFError.  Programming errors (TypeError, KeyError, …) are not data problems
# and still stop the run.
DATA_ERRORS = (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def load_rgb(path: str | Path, background: tuple[int, int, int] = (255, 255, 255)) -> Image.Image:
    """The image at `path`, fully decoded, as RGB.

    Decoding happens here, not lazily in a later transform, so a truncated file
    fails at the line that names it.  Grayscale, palette and CMYK images
    are converted; transparent pixels are composited onto `background`
    (a plain `convert("RGB")` keeps whatever colour hides under them).
    Note: with `ImageFile.LOAD_TRUNCATED_IMAGES = True` Pillow fills a truncated
    image with grey instead of raising, and this cannot tell.
    """
    with Image.open(path) as image:
        image.load()
        if image.mode == "P" and "transparency" in image.info:
            image = image.convert("RGBA")
        if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
            rgba = image.convert("RGBA")
            canvas = Image.new("RGBA", rgba.size, (*background, 255))
            return Image.alpha_composite(canvas, rgba).convert("RGB")
        return image.convert("RGB")


class BadSample(NamedTuple):
    """A sample that could not be loaded: which one, and why."""
    index: int
    source: str
    reason: str


class SkipBadSamples(Dataset):
    """Wraps a map-style dataset: a sample whose loading raises one of `errors`
    is returned as a BadSample instead.  `sources[index]` (e.g. the file paths)
    names the sample in reports; without it the index does."""

    def __init__(self, dataset: Dataset, sources: Sequence | None = None,
                 errors: tuple[type[BaseException], ...] = DATA_ERRORS):
        self.dataset, self.sources, self.errors = dataset, sources, errors

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index):
        try:
            return self.dataset[index]
        except self.errors as err:
            source = str(self.sources[index]) if self.sources is not None else f"sample {index}"
            return BadSample(int(index), source, f"{type(err).__name__}: {err}")


class CollatedBatch(NamedTuple):
    """What collate_good_samples returns: the collated good samples (None when
    the batch held no good one) and the BadSamples that were left out."""
    samples: Any
    skipped: list
    size: int


def collate_good_samples(batch: list, collate=default_collate) -> CollatedBatch:
    """collate_fn for a DataLoader over SkipBadSamples."""
    good = [sample for sample in batch if not isinstance(sample, BadSample)]
    skipped = [sample for sample in batch if isinstance(sample, BadSample)]
    return CollatedBatch(collate(good) if good else None, skipped, len(batch))


class TooManyBadSamples(RuntimeError):
    pass


class SkippedSamples:
    """Iterate a loader built with collate_good_samples; keep the record.

    `max_fraction`: once at least `min_seen` samples were read, more than this
    share of bad ones raises TooManyBadSamples; skipping is for the odd broken
    file, not for a dataset that cannot be read at all."""

    def __init__(self, max_fraction: float = 0.25, min_seen: int = 64):
        self.max_fraction, self.min_seen = max_fraction, min_seen
        self.skipped: list[BadSample] = []
        self.seen = 0

    def good_batches(self, loader: Iterable) -> Iterator:
        for batch in loader:
            if not isinstance(batch, CollatedBatch):
                raise TypeError("SkippedSamples.good_batches() needs a DataLoader built with "
                                "collate_fn=collate_good_samples over a SkipBadSamples dataset; "
                                f"got a batch of type {type(batch).__name__}")
            self.seen += batch.size
            self.skipped.extend(batch.skipped)
            if self.seen >= self.min_seen and len(self.skipped) > self.max_fraction * self.seen:
                raise TooManyBadSamples(
                    f"{len(self.skipped)} of the first {self.seen} samples failed to load "
                    f"(more than {self.max_fraction:.0%}); the first: {self.skipped[0].source}: "
                    f"{self.skipped[0].reason}. Check the data path and the decoder, or pass "
                    "a larger max_fraction to SkippedSamples if this corpus really is that damaged.")
            if batch.samples is not None:
                yield batch.samples

    def __len__(self) -> int:
        return len(self.skipped)

    def __iter__(self) -> Iterator[BadSample]:
        """The BadSamples skipped so far, in the order they came."""
        return iter(self.skipped)

    def summary(self) -> str:
        lines = [f"skipped {len(self.skipped)} of {self.seen} samples that could not be loaded"]
        lines += [f"  {bad.source}: {bad.reason}" for bad in sorted(self.skipped)]
        return "\n".join(lines)


def scan_images(paths: Iterable[str | Path]) -> list[BadSample]:
    """Decode every file with load_rgb, as training would; return the ones that fail.
    (`Image.verify()` is faster but does not decode the pixels: a JPEG cut off
    inside its compressed data passes it.)"""
    bad = []
    for index, path in enumerate(paths):
        try:
            load_rgb(path)
        except DATA_ERRORS as err:
            bad.append(BadSample(index, str(path), f"{type(err).__name__}: {err}"))
    return bad


def main(argv: list[str] | None = None) -> int:
    """`python -m fixes.bad_samples DIR …`: list the image files training could not load."""
    roots = argv if argv is not None else sys.argv[1:]
    if not roots:
        print("usage: python -m fixes.bad_samples DIR [DIR …]", file=sys.stderr)
        return 2
    missing = [root for root in roots if not Path(root).is_dir()]
    if missing:
        print(f"error: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    paths = sorted(p for root in roots for p in Path(root).rglob("*")
                   if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    bad = scan_images(paths)
    for sample in bad:
        print(f"{sample.source}: {sample.reason}")
    print(f"{len(bad)} of {len(paths)} image files cannot be loaded", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
