"""The small image corpus scenario 02 trains on, written with Pillow at run time,
and the check a run makes against it.  Imported by the scenario's scripts.

Two classes in ImageFolder layout (cat/, dog/), JPEG and PNG files of mixed
sizes, and the defects real corpora collect, planted at fixed places so that
every run meets them in the same batches (batch_size 8, sorted file order):

    cat/0013.jpg   grayscale JPEG (mode L)          readable: convert it
    cat/0021.png   RGBA PNG with transparency        readable: convert it
    cat/0032.jpg   JPEG cut off at 60 %  (an interrupted copy)         batch 4
    dog/._0061.jpg AppleDouble metadata a Mac leaves on non-Mac disks  batch 6
    dog/0071.jpg … dog/0080.jpg   HTML "503" page a scraper saved      batches 9, 10
    dog/0090.jpg   zero bytes (disk full during the download)          batch 11

Batch 9 holds nothing but error pages.  The workshop grader's seed moves the unreadable
files to other places (scenarios/synthetic_data.py), the same kinds and counts, so that
no fix can list them by name instead of handling them.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from scenarios.synthetic_data import grading_rng

PER_CLASS = 48
UNREADABLE = ("truncated jpeg", "appledouble", "html error page", "zero bytes")
HTML_ERROR_PAGE = (b"<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head>\n"
                   b"<body><h1>Service Unavailable</h1><p>Please try again later.</p></body></html>\n")
# An AppleDouble header (magic 0x00051607, version 2) and the entry table macOS writes.
APPLEDOUBLE = (bytes.fromhex("0005160700020000") + b"Mac OS X        " + bytes.fromhex("0002")
               + bytes.fromhex("00000009000000320000000e" "00000002000000400000005e") + bytes(4000))


def _picture(rng: np.random.Generator, tint: np.ndarray) -> np.ndarray:
    """A smooth colour gradient with a box on it: compresses like a photo, not like noise."""
    height, width = rng.integers(40, 73, size=2)
    y, x = np.mgrid[0:height, 0:width]
    pixels = (tint * ((x + y) / (width + height))[..., None] * 255).astype(np.uint8)
    top, left = rng.integers(0, 20, size=2)
    pixels[top:top + 16, left:left + 16] = rng.integers(0, 256, size=3, dtype=np.uint8)
    return pixels


def _encoded(pixels: np.ndarray, fmt: str, mode: str = "RGB") -> bytes:
    image = Image.fromarray(pixels)
    if mode == "L":
        image = image.convert("L")
    elif mode == "RGBA":
        alpha = np.full(pixels.shape[:2], 255, np.uint8)
        alpha[:, : pixels.shape[1] // 3] = 0  # a transparent left third, as in a cut-out logo
        image = Image.fromarray(np.dstack([pixels, alpha]), "RGBA")
    out = io.BytesIO()
    image.save(out, fmt, quality=85) if fmt == "JPEG" else image.save(out, fmt)
    return out.getvalue()


def _defects() -> tuple[dict[int, str], int]:
    """{file number: kind} of the files that are not plain images, and the number the
    AppleDouble file shadows: the documented places, or those the grader's seed picks."""
    moved = grading_rng()
    if moved is None:
        truncated, pages, empty, shadowed = 32, 71, 90, 61
    else:
        truncated = int(moved.choice([n for n in range(PER_CLASS) if n not in (13, 21)]))
        pages = int(moved.integers(PER_CLASS, 2 * PER_CLASS - 10))
        empty, shadowed = (int(n) for n in moved.choice(
            [n for n in range(PER_CLASS, 2 * PER_CLASS) if not pages <= n < pages + 10], 2, replace=False))
    kinds = {n: "html error page" for n in range(pages, pages + 10)}
    kinds.update({13: "grayscale", 21: "rgba", truncated: "truncated jpeg", empty: "zero bytes"})
    return kinds, shadowed


def write_corpus(root: str | Path, seed: int = 0) -> dict[str, str]:
    """Write the corpus under `root`; return {path: kind} for every file written,
    kind being "image", "grayscale", "rgba", or one of UNREADABLE."""
    rng = np.random.default_rng(seed)
    defects, shadowed = _defects()
    corpus = {}
    for label, name in enumerate(("cat", "dog")):
        folder = Path(root, name)
        folder.mkdir(parents=True, exist_ok=True)
        tint = np.array([1.0, 0.6, 0.3]) if label == 0 else np.array([0.3, 0.6, 1.0])
        for number in range(label * PER_CLASS, (label + 1) * PER_CLASS):
            pixels = _picture(rng, tint)
            kind = defects.get(number, "image")
            fmt = "PNG" if kind == "rgba" or (kind == "image" and number % 8 == 5) else "JPEG"
            path = folder / f"{number:04d}.{fmt.lower().replace('jpeg', 'jpg')}"
            data = _encoded(pixels, fmt, mode={"grayscale": "L", "rgba": "RGBA"}.get(kind, "RGB"))
            if kind == "truncated jpeg":
                data = data[: len(data) * 6 // 10]
            elif kind == "html error page":
                data = HTML_ERROR_PAGE
            elif kind == "zero bytes":
                data = b""
            path.write_bytes(data)
            corpus[str(path)] = kind
        if name == "dog":
            path = folder / f"._{shadowed:04d}.jpg"
            path.write_bytes(APPLEDOUBLE)
            corpus[str(path)] = "appledouble"
    return corpus


def check_epoch(corpus: dict[str, str], consumed: list[str], skipped) -> None:
    """After an epoch: exit with what went wrong unless it read each readable image exactly
    once and named every unreadable file (`skipped`: the BadSamples it left out)."""
    good = sorted(path for path, kind in corpus.items() if kind not in UNREADABLE)
    unreadable = {path for path, kind in corpus.items() if kind in UNREADABLE}
    named = {bad.source for bad in skipped}
    print(f"metric bad_files_named={len(named & unreadable)}")
    if sorted(consumed) != good or named != unreadable:
        sys.exit(f"consumed {len(consumed)} images ({len(set(consumed))} distinct) of {len(good)} "
                 f"readable; named {len(named & unreadable)} of {len(unreadable)} unreadable files")
    print(f"consumed each of the {len(good)} readable images once, "
          f"named all {len(unreadable)} unreadable files")
