"""Detection loader in the style of a COCO dataset: the annotation file is loaded
with json into a list of per-image dicts."""
import json
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

ANNOTATIONS = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "instances_val.json"


def write_annotations(path: Path, images: int = 50_000) -> None:
    rng = np.random.default_rng(0)
    records = []
    for image_id in range(images):
        boxes = (rng.random((int(rng.integers(1, 9)), 4)) * 600).round(1).tolist()
        records.append({"file_name": f"train2017/{image_id:012d}.jpg", "height": 480, "width": 640,
                        "boxes": boxes, "labels": rng.integers(0, 80, size=len(boxes)).tolist()})
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(records))
    partial.replace(path)


class CocoDetection(Dataset):
    def __init__(self, annotation_file):
        with open(annotation_file) as f:
            self.images = json.load(f)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        record = self.images[index]
        boxes = torch.tensor(record["boxes"][:1])  # the first box: enough for this sketch
        return boxes.flatten(), len(record["labels"])


def make_loader():
    if not ANNOTATIONS.exists():
        write_annotations(ANNOTATIONS)
    return DataLoader(CocoDetection(ANNOTATIONS), batch_size=256, shuffle=True, num_workers=2)
