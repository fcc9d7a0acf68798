"""Images of different sizes with COCO-style box annotations, loaded as torchvision's detection
training script loads them: each sample is an image tensor and a target dict (boxes turned from
xywh to clamped xyxy with degenerate ones dropped, labels, image_id, area, iscrowd, as
coco_utils' ConvertCocoPolysToMask builds it), batches drawn by a GroupedBatchSampler that keeps
images of one aspect-ratio bin together (create_aspect_ratio_groups with k=3), and collated by
utils.collate_fn, tuple(zip(*batch)), since the images differ in size and box count.  The
annotations live in numpy arrays (one row per box, rows located by per-image offsets) rather
than in pycocotools' dicts.

Source: pytorch/vision, references/detection/train.py (get_dataset, the train DataLoader with
batch_sampler=GroupedBatchSampler(...) and collate_fn=utils.collate_fn), commit
3ceb056d4c4a2d79ccdc65cbd2342b0e89a7ae47
https://github.com/pytorch/vision/blob/3ceb056d4c4a2d79ccdc65cbd2342b0e89a7ae47/references/detection/train.py
with references/detection/group_by_aspect_ratio.py (commit d2aeec2a39981969440d24550feb86c75d894f82),
references/detection/utils.py (collate_fn) and references/detection/coco_utils.py (ConvertCocoPolysToMask).
Well built: no risk expected (images of different sizes and box counts are kept as tuples by the
collate, the annotations are numpy buffers).
"""
import atexit
import bisect
import math
import shutil
import tempfile
from collections import defaultdict
from itertools import chain, repeat
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

SIZES = [(64, 48), (48, 64), (64, 64), (80, 40), (40, 80)]  # (width, height)


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_coco_like(root: Path, images: int = 160) -> Path:
    """JPEG files plus numpy annotations: image sizes, and per box (image row, x, y, w, h, category, iscrowd)."""
    rng = np.random.default_rng(17)
    (root / "train2017").mkdir()
    sizes, boxes = [], []
    for i in range(images):
        width, height = SIZES[int(rng.integers(len(SIZES)))]
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / "train2017" / f"{i:012d}.jpg", quality=85)
        sizes.append((width, height))
        for _ in range(int(rng.integers(0, 7))):
            x, y = rng.uniform(0, width), rng.uniform(0, height)
            w, h = rng.uniform(0, width / 2), rng.uniform(0, height / 2)  # some run past the edge
            boxes.append((i, x, y, w, h, int(rng.integers(1, 91)), int(rng.random() < 0.05)))
    np.save(root / "sizes.npy", np.array(sizes, dtype=np.int64))
    np.save(root / "boxes.npy", np.array(boxes, dtype=np.float32).reshape(-1, 7))
    return root


class CocoDetectionLike(Dataset):
    def __init__(self, root: Path):
        self.folder = root / "train2017"
        self.sizes = np.load(root / "sizes.npy")
        boxes = np.load(root / "boxes.npy")
        self.boxes = boxes[np.argsort(boxes[:, 0], kind="stable")]
        counts = np.bincount(self.boxes[:, 0].astype(np.int64), minlength=len(self.sizes))
        self.starts = np.concatenate([[0], np.cumsum(counts)])

    def __len__(self):
        return len(self.sizes)

    def get_height_and_width(self, index):
        width, height = self.sizes[index]
        return int(height), int(width)

    def __getitem__(self, index):
        with Image.open(self.folder / f"{index:012d}.jpg") as img:
            pixels = np.asarray(img.convert("RGB"))
        image = torch.from_numpy(pixels.copy()).permute(2, 0, 1).float().div(255)
        return image, self.convert(index, image.shape[-1], image.shape[-2])

    def convert(self, index, width, height):
        rows = torch.from_numpy(self.boxes[self.starts[index]:self.starts[index + 1]])
        boxes = rows[:, 1:5].clone()
        boxes[:, 2:] += boxes[:, :2]  # xywh -> xyxy
        boxes[:, 0::2].clamp_(min=0, max=width)
        boxes[:, 1::2].clamp_(min=0, max=height)
        keep = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 2] > boxes[:, 0])
        boxes = boxes[keep]
        return {"boxes": boxes,
                "labels": rows[keep, 5].long(),
                "image_id": index,
                "area": (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]),
                "iscrowd": rows[keep, 6].long()}


def create_aspect_ratio_groups(dataset, k=3):
    bins = sorted((2 ** np.linspace(-1, 1, 2 * k + 1)).tolist())
    ratios = []
    for i in range(len(dataset)):
        height, width = dataset.get_height_and_width(i)
        ratios.append(width / height)
    return [bisect.bisect_right(bins, r) for r in ratios]


class GroupedBatchSampler(BatchSampler):
    """Batches of one group only; leftovers are topped up from their own group at the end."""

    def __init__(self, sampler, group_ids, batch_size):
        self.sampler, self.group_ids, self.batch_size = sampler, group_ids, batch_size

    def __iter__(self):
        waiting, seen = defaultdict(list), defaultdict(list)
        emitted = 0
        for idx in self.sampler:
            group = self.group_ids[idx]
            waiting[group].append(idx)
            seen[group].append(idx)
            if len(waiting[group]) == self.batch_size:
                yield waiting.pop(group)
                emitted += 1
        left = len(self) - emitted
        for group, partial in sorted(waiting.items(), key=lambda kv: len(kv[1]), reverse=True):
            if left <= 0:
                break
            need = self.batch_size - len(partial)
            pool = seen[group]
            filler = list(chain.from_iterable(repeat(pool, math.ceil(need / len(pool)))))
            yield partial + filler[:need]
            left -= 1

    def __len__(self):
        return len(self.sampler) // self.batch_size


def collate_fn(batch):
    return tuple(zip(*batch))


def make_loader():
    dataset = CocoDetectionLike(write_coco_like(scratch()))
    group_ids = create_aspect_ratio_groups(dataset, k=3)
    batch_sampler = GroupedBatchSampler(RandomSampler(dataset), group_ids, batch_size=4)
    return DataLoader(dataset, batch_sampler=batch_sampler, num_workers=2, collate_fn=collate_fn)
