"""The same detection records serialized into one numpy byte buffer plus an offset array, as
detectron2's DatasetFromList does with serialize=True (its _TorchSerializedList): a worker reads
two arrays, not 60,000 dicts, so nothing is copied on read.

Source: facebookresearch/detectron2, detectron2/data/common.py (DatasetFromList, serialize=True),
commit 9f71f50b13c76e95540a5944bfa00c49db55eab0
https://github.com/facebookresearch/detectron2/blob/9f71f50b13c76e95540a5944bfa00c49db55eab0/detectron2/data/common.py
Well built: no risk expected.
"""
import atexit
import json
import pickle
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
    records = [{"file_name": f"img/{i:07d}.jpg", "image_id": i,
                "annotations": [{"bbox": [float(x) for x in b], "category_id": c}
                                for b, c in zip(boxes[i], classes[i])]}
               for i in range(RECORDS)]
    path.write_text(json.dumps(records))


class PackedRecords(Dataset):
    def __init__(self, records: list):
        blobs = [np.frombuffer(pickle.dumps(r, protocol=-1), dtype=np.uint8) for r in records]
        self.ends = np.cumsum([len(b) for b in blobs], dtype=np.int64)
        self.buffer = np.concatenate(blobs)

    def __len__(self):
        return len(self.ends)

    def __getitem__(self, index):
        start = 0 if index == 0 else int(self.ends[index - 1])
        record = pickle.loads(self.buffer[start:int(self.ends[index])].tobytes())
        boxes = torch.tensor([a["bbox"] for a in record["annotations"]])
        return boxes, record["image_id"]


def make_loader():
    path = scratch() / "records.json"
    write_records(path)
    return DataLoader(PackedRecords(json.loads(path.read_text())), batch_size=64, shuffle=True, num_workers=2)
