"""Detection samples in the shape of torchvision's CocoDetection (an image and its list of
boxes, a different number per image), batched by the default collate: torch.stack refuses
boxes of unequal length ("stack expects each tensor to be equal size").

Source: pytorch/vision, torchvision/datasets/coco.py (CocoDetection), commit
d3aa1db05583682be3000a97b99faadb14798981
https://github.com/pytorch/vision/blob/d3aa1db05583682be3000a97b99faadb14798981/torchvision/datasets/coco.py
(without references/detection/utils.py's collate_fn).
Faulty: scenario 16 (variable-size samples and the default collate).
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_annotations(path: Path, images: int = 64) -> None:
    rng = np.random.default_rng(12)
    annotations = [{"image_id": i, "bbox": [float(x) for x in rng.integers(0, 200, 4)], "category_id": int(c)}
                   for i in range(images) for c in rng.integers(1, 80, int(rng.integers(1, 6)))]
    path.write_text(json.dumps({"images": [{"id": i} for i in range(images)], "annotations": annotations}))


class CocoBoxes(Dataset):
    def __init__(self, annotation_file: Path):
        document = json.loads(annotation_file.read_text())
        self.ids = [image["id"] for image in document["images"]]
        boxes = {}
        for a in document["annotations"]:
            boxes.setdefault(a["image_id"], []).append(a["bbox"])
        self.boxes = {i: np.array(b, dtype=np.float32) for i, b in boxes.items()}

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        image = torch.zeros(3, 32, 32)
        return image, torch.from_numpy(self.boxes[self.ids[index]])


def make_loader():
    path = scratch() / "instances.json"
    write_annotations(path)
    return DataLoader(CocoBoxes(path), batch_size=4, shuffle=True, num_workers=2)
