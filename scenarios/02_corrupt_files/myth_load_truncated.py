"""Scenario 02, myth check: does `ImageFile.LOAD_TRUNCATED_IMAGES = True` fix it?

    python scenarios/02_corrupt_files/myth_load_truncated.py

The usual answer to "OSError: image file is truncated".  It rescues exactly that
file, by filling its missing part with grey, and trains on the result; the
zero-byte file, the HTML pages and the AppleDouble file are not truncated
images but no images at all, and the epoch dies on the first of them.
"""
import tempfile

import numpy as np
from PIL import Image, ImageFile

from broken import main
from _image_corpus import write_corpus

ImageFile.LOAD_TRUNCATED_IMAGES = True  # MYTH: the cure for "image file is truncated".


def grey_fill_percent():
    """How much of the rescued image is Pillow's fill rather than picture."""
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)
        truncated = next(path for path, kind in corpus.items() if kind == "truncated jpeg")
        pixels = np.asarray(Image.open(truncated).convert("RGB")).astype(int)
    flat_grey_rows = (np.abs(pixels - 128) <= 2).all(axis=(1, 2))
    return 100 * flat_grey_rows.mean()


if __name__ == "__main__":
    print(f"metric truncated_image_grey_percent={grey_fill_percent():.1f}")
    main()
