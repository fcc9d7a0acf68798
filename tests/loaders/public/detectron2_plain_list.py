"""Detection records kept as a plain Python list of dicts, as detectron2's DatasetFromList holds
them when serialize=False: every forked worker touches every dict's reference count.

Source: facebookresearch/detectron2, detectron2/data/common.py (DatasetFromList, serialize=False),
commit 9f71f50b13c76e95540a5944bfa00c49db55eab0
https://github.com/facebookresearch/detectron2/blob/9f71f50b13c76e95540a5944bfa00c49db55eab0/detectron2/data/common.py
Faulty: scenario 03 (copy-on-read).
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

RECORDS = 60_000


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_records(path: Path) -> None:
    rng = np.random.default_rng(1)
    boxes, classes = rng.integers(0, 400, (RECORDS, 2, 4)).tolist(), rng.integers(0, 80, (RECORDS, 2)).tolist()
    records = [{"file_name": f"img/{i:07d}.jpg", "image_id": i, "height": 480, "width": 640,
                "annotations": [{"bbox": [float(x) for x in b], "category_id": c}
                                for b, c in zip(boxes[i], classes[i])]}
               for i in range(RECORDS)]
    path.write_text(json.dumps(records))


class RecordList(Dataset):
    def __init__(self, records: list):
        self.records = records  # kept as Python objects: no serialization

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        record = self.records[index]
        boxes = torch.tensor([a["bbox"] for a in record["annotations"]])
        return boxes, record["image_id"]


def make_loader():
    path = scratch() / "records.json"
    write_records(path)
    return DataLoader(RecordList(json.loads(path.read_text())), batch_size=64, shuffle=True, num_workers=2)
