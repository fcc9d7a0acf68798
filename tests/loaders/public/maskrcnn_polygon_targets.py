"""COCO instance-segmentation samples as maskrcnn-benchmark's COCODataset returns them: each
image's target holds its boxes and labels, and a SegmentationMask whose polygons are kept one
tensor per polygon of every object (PolygonInstance turns each list of coordinates into its own
float tensor); BatchCollator batches images and keeps the targets as a tuple of per-image
objects.  Every one of those small tensors crosses from the worker in its own shared-memory
block, so each batch in flight holds hundreds of file descriptors in the training process, and
training runs died with "OSError: [Errno 24] Too many open files" (or "unable to open shared
memory object") after the polygon masks were added.

Source: facebookresearch/maskrcnn-benchmark issue
https://github.com/facebookresearch/maskrcnn-benchmark/issues/158 ("OSError: [Errno 24] Too
many open files" in training), maskrcnn_benchmark/structures/segmentation_mask.py
(PolygonInstance, PolygonList), commit 00d0f14d03801140993d7957bda592efddcffe3b
https://github.com/facebookresearch/maskrcnn-benchmark/blob/00d0f14d03801140993d7957bda592efddcffe3b/maskrcnn_benchmark/structures/segmentation_mask.py
and maskrcnn_benchmark/data/collate_batch.py (BatchCollator).
Faulty: scenario 08 (many small tensors per sample under the file_descriptor strategy).
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

IMAGES = 96


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_annotations(path: Path) -> None:
    rng = np.random.default_rng(21)
    annotations = []
    for image_id in range(IMAGES):
        for _ in range(int(rng.integers(14, 22))):
            x, y = (float(v) for v in rng.integers(0, 200, 2))
            polygons = [[round(float(v), 1) for v in rng.random(2 * int(rng.integers(4, 12))) * 40 + x]
                        for _ in range(int(rng.integers(1, 4)))]
            annotations.append({"image_id": image_id, "bbox": [x, y, 40.0, 30.0],
                                "category_id": int(rng.integers(1, 81)), "segmentation": polygons})
    path.write_text(json.dumps({"annotations": annotations}))


class BoxList:
    def __init__(self, bbox, size):
        self.bbox, self.size, self.extra_fields = bbox, size, {}

    def add_field(self, name, value):
        self.extra_fields[name] = value


class PolygonInstance:
    def __init__(self, polygons, size):
        self.polygons = [torch.as_tensor(p, dtype=torch.float32) for p in polygons if len(p) >= 6]
        self.size = size


class SegmentationMask:
    def __init__(self, instances, size):
        self.polygons = [PolygonInstance(p, size) for p in instances]
        self.size = size


class COCODataset(Dataset):
    def __init__(self, annotation_file: Path):
        by_image = {}
        for ann in json.loads(annotation_file.read_text())["annotations"]:
            by_image.setdefault(ann["image_id"], []).append(ann)
        self.ids = sorted(by_image)
        self.boxes = {i: np.array([a["bbox"] for a in by_image[i]], dtype=np.float32) for i in self.ids}
        self.labels = {i: np.array([a["category_id"] for a in by_image[i]]) for i in self.ids}
        self.segmentations = {i: json.dumps([a["segmentation"] for a in by_image[i]]) for i in self.ids}

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        image_id = self.ids[index]
        image = torch.rand(3, 96, 128, generator=torch.Generator().manual_seed(index))
        boxes = torch.from_numpy(self.boxes[image_id]).clone()
        boxes[:, 2:] += boxes[:, :2]
        target = BoxList(boxes, (128, 96))
        target.add_field("labels", torch.from_numpy(self.labels[image_id]))
        target.add_field("masks", SegmentationMask(json.loads(self.segmentations[image_id]), (128, 96)))
        return image, target, index


class BatchCollator:
    def __call__(self, batch):
        images, targets, ids = list(zip(*batch))
        return torch.stack(images), targets, ids


def make_loader():
    path = scratch() / "instances_train.json"
    write_annotations(path)
    return DataLoader(COCODataset(path), batch_size=8, shuffle=True, num_workers=2, collate_fn=BatchCollator())
