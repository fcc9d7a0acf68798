"""Unpaired image translation data as CycleGAN's UnalignedDataset reads it: two sorted lists of
image paths (domain A and domain B); sample i takes A[i % len(A)] and a B image drawn with
Python's random.randint, so that the pairs change every epoch; both images are opened per
sample, resized, randomly cropped and flipped, and normalised to [-1, 1].

Source: junyanz/pytorch-CycleGAN-and-pix2pix, data/unaligned_dataset.py (UnalignedDataset) and
data/base_dataset.py (get_transform), commit d45df3a66a7844fbbbdfbc8ec9ac96b6e71d4720
https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/blob/d45df3a66a7844fbbbdfbc8ec9ac96b6e71d4720/data/unaligned_dataset.py
and data/__init__.py (CustomDatasetDataLoader: shuffle, num_threads workers).
Well built: no risk expected (Python's random is reseeded in every worker by PyTorch, and the
crop and flip draw from it too; two short lists of file names; files opened per sample).
"""
import atexit
import os
import random
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


def write_domains(root: Path, a_count: int = 96, b_count: int = 80) -> Path:
    rng = np.random.default_rng(41)
    for phase, count, tint in (("trainA", a_count, (40, 120, 40)), ("trainB", b_count, (120, 40, 160))):
        (root / phase).mkdir()
        for i in range(count):
            pixels = np.clip(rng.normal(tint, 30, (44, 44, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / phase / f"{i:04d}.jpg", quality=90)
    return root


def make_dataset(folder: Path) -> list:
    return sorted(str(folder / name) for name in os.listdir(folder) if name.endswith((".jpg", ".png")))


def transform(image: Image.Image, load_size: int = 36, crop_size: int = 32) -> torch.Tensor:
    image = image.resize((load_size, load_size), Image.BICUBIC)
    x, y = random.randint(0, load_size - crop_size), random.randint(0, load_size - crop_size)
    image = image.crop((x, y, x + crop_size, y + crop_size))
    if random.random() > 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    tensor = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float().div(255)
    return (tensor - 0.5) / 0.5


class UnalignedDataset(Dataset):
    def __init__(self, dataroot: Path, serial_batches: bool = False):
        self.A_paths = make_dataset(dataroot / "trainA")
        self.B_paths = make_dataset(dataroot / "trainB")
        self.A_size, self.B_size = len(self.A_paths), len(self.B_paths)
        self.serial_batches = serial_batches

    def __len__(self):
        return max(self.A_size, self.B_size)

    def __getitem__(self, index):
        A_path = self.A_paths[index % self.A_size]
        index_B = index % self.B_size if self.serial_batches else random.randint(0, self.B_size - 1)
        B_path = self.B_paths[index_B]
        A = transform(Image.open(A_path).convert("RGB"))
        B = transform(Image.open(B_path).convert("RGB"))
        return {"A": A, "B": B, "A_paths": A_path, "B_paths": B_path}


def make_loader():
    return DataLoader(UnalignedDataset(write_domains(scratch())), batch_size=4, shuffle=True, num_workers=2)
