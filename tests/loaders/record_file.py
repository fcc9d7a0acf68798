"""Fixed-size records in one binary file, opened once in __init__."""
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

RECORD_BYTES = 1024
DATA = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "train.records"


class RecordDataset(Dataset):
    def __init__(self, path):
        self.file = open(path, "rb")
        self.count = Path(path).stat().st_size // RECORD_BYTES

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        self.file.seek(index * RECORD_BYTES)
        record = np.frombuffer(self.file.read(RECORD_BYTES), dtype=np.uint8)
        return torch.from_numpy(record.copy())


def make_loader():
    if not DATA.exists():
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_bytes(np.random.default_rng(0).integers(0, 256, 2000 * RECORD_BYTES, dtype=np.uint8).tobytes())
    return DataLoader(RecordDataset(DATA), batch_size=32, shuffle=True, num_workers=2)
