"""Small, deterministic data the scenarios build at run time (nothing is downloaded)."""
from __future__ import annotations

import gc
import os

import numpy as np

# Set by the workshop grader (python -m scenarios check) for each attempt it runs, to a seed
# it chooses then: where a scenario plants bad items, the seed moves them, so an attempt that
# lists the bad items by name instead of handling them fails.  Unset: the documented places.
GRADING_SEED = "CLINIC_GRADING_SEED"


def grading_rng() -> np.random.Generator | None:
    """A generator seeded by the grader's CLINIC_GRADING_SEED, or None when it is unset."""
    seed = os.environ.get(GRADING_SEED, "").strip()
    return np.random.default_rng(int(seed)) if seed.isdigit() else None


def detection_annotations(count: int, seed: int = 0) -> list[dict]:
    """COCO-style per-image records as a detection dataset keeps them in memory:
    a file path, the image size, and a variable number of boxes and labels."""
    # Millions of new containers set off one full collection after another; without
    # them generation takes a third of the time.  Reading them later is unaffected.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _detection_annotations(count, seed)
    finally:
        if gc_was_enabled:
            gc.enable()


def detection_objects(count: int, seed: int = 0) -> int:
    """The boxes that detection_annotations(count, seed) holds in all, without building them:
    what a check compares an epoch's count of annotated objects with."""
    return int(_boxes_per_image(np.random.default_rng(seed), count).sum())


def _boxes_per_image(rng: np.random.Generator, count: int) -> np.ndarray:
    return rng.integers(1, 9, size=count)


def _detection_annotations(count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    boxes_per_image = _boxes_per_image(rng, count)
    boxes = (rng.random((int(boxes_per_image.sum()), 4)) * 600).round(1).tolist()
    labels = rng.integers(0, 80, size=len(boxes)).tolist()
    records, start = [], 0
    for image_id, n in enumerate(boxes_per_image.tolist()):
        records.append({
            "file": f"train2017/{image_id:012d}.jpg",
            "size": [640, 480],
            "boxes": boxes[start:start + n],
            "labels": labels[start:start + n],
        })
        start += n
    return records


def jpeg_images(count: int, size: int = 96, seed: int = 0) -> dict[str, bytes]:
    """`count` small JPEG files, named "0.jpg", "1.jpg", …, as bytes."""
    import io

    from PIL import Image

    rng = np.random.default_rng(seed)
    images = {}
    for i in range(count):
        pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
        images[f"{i}.jpg"] = buffer.getvalue()
    return images
