"""Scenario 18's data, imported by its scripts: one HDF5 file of small images, each a known function of its index.

Sample i is the 16x16 image whose pixels are (i + pixel number) mod 251, so a
sample that comes back with another sample's pixels, or with a few garbled
ones, never passes for the right one.  The images are stored the way image
data sets usually are: one dataset, chunked and gzip-compressed, so that
reading one sample means reading the dataset's chunk index (a B-tree) and
inflating one chunk.
"""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

SAMPLES = 1024
SIDE = 16
CHUNK = 8  # images per compressed chunk


def expected_image(index: int) -> np.ndarray:
    """What sample `index` must hold."""
    return ((index + np.arange(SIDE * SIDE)) % 251).astype(np.uint8).reshape(SIDE, SIDE)


def write_samples(path: Path, count: int = SAMPLES, compressed: bool = True) -> Path:
    """Write `count` images to `path` as the dataset "images": chunked and gzip-compressed,
    or (compressed=False) contiguous and raw, where nothing can tell good bytes from bad."""
    images = np.stack([expected_image(i) for i in range(count)])
    layout = {"chunks": (CHUNK, SIDE, SIDE), "compression": "gzip"} if compressed else {}
    with h5py.File(path, "w") as out:
        out.create_dataset("images", data=images, **layout)
    return path
