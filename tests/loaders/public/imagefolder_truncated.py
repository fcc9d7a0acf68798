"""A class-per-folder image set read with Pillow, as torchvision's ImageFolder lists it (a list of
(path, class index) pairs) and its pil_loader opens it; one JPEG was cut short by an interrupted
copy: Pillow's "image file is truncated", raised in a worker.

Source: pytorch/vision, torchvision/datasets/folder.py (ImageFolder, make_dataset, pil_loader)
https://github.com/pytorch/vision/blob/main/torchvision/datasets/folder.py
Faulty: scenario 02 (an unreadable file ends the epoch).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_images(root: Path, count: int = 48) -> None:
    rng = np.random.default_rng(11)
    for i in range(count):
        path = root / ("ants" if i % 2 else "bees") / f"{i:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(path, quality=90)
    cut = root / "bees" / "0008.jpg"
    cut.write_bytes(cut.read_bytes()[:400])


class Folder(Dataset):
    def __init__(self, root: Path):
        self.classes = sorted(p.name for p in root.iterdir() if p.is_dir())
        self.samples = [(str(p), self.classes.index(p.parent.name)) for p in sorted(root.rglob("*.jpg"))]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        return torch.from_numpy(np.asarray(image.resize((32, 32))).copy()).permute(2, 0, 1), target


def make_loader():
    root = scratch()
    write_images(root)
    return DataLoader(Folder(root), batch_size=8, num_workers=2)
