"""3-D volumes whose shape comes from a header stored beside them; one damaged header makes the
worker ask numpy for an array larger than the machine: numpy's MemoryError "Unable to allocate
… for an array with shape …", raised in a worker, as in nnU-Net's report.

Source: MIC-DKFZ/nnUNet issue https://github.com/MIC-DKFZ/nnUNet/issues/2213 ("unable to
allocate memory" while preprocessing volumes), and pytorch/pytorch issue
https://github.com/pytorch/pytorch/issues/5902 (memory with num_workers > 0).
Faulty: scenario 10 (a worker out of memory), not 02.
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


def write_cases(root: Path, cases: int = 16) -> None:
    rng = np.random.default_rng(7)
    for case in range(cases):
        shape = [8, 16, 16] if case != 5 else [4_096, 524_288, 524_288]  # case 5: a damaged header
        (root / f"case_{case:03d}.json").write_text(json.dumps({"shape": shape}))
        rng.standard_normal(8 * 16 * 16).astype(np.float32).tofile(root / f"case_{case:03d}.raw")


class Volumes(Dataset):
    def __init__(self, root: Path):
        self.headers = sorted(root.glob("case_*.json"))

    def __len__(self):
        return len(self.headers)

    def __getitem__(self, index):
        shape = json.loads(self.headers[index].read_text())["shape"]
        volume = np.zeros(shape, dtype=np.float64)  # resampled into the header's grid
        raw = np.fromfile(self.headers[index].with_suffix(".raw"), dtype=np.float32)
        volume.flat[:raw.size] = raw
        return torch.from_numpy(volume[:8, :16, :16].astype(np.float32))


def make_loader():
    root = scratch()
    write_cases(root)
    return DataLoader(Volumes(root), batch_size=2, num_workers=2)
