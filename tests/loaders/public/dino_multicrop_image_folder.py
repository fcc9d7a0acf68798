"""Images in class folders read by an ImageFolder and turned by DINO's DataAugmentationDINO into
a list of crops per image: two global crops and several local ones, each a random resized crop
with a random flip drawn from torch's generator (as torchvision's transforms draw them); the
default collate stacks the i-th crops of the batch into one tensor, so a batch is a list of a
few tensors whatever the number of images.  The labels are ignored by the self-supervised loss.

Source: facebookresearch/dino, main_dino.py (DataAugmentationDINO, datasets.ImageFolder,
DataLoader(..., drop_last=True)), commit cc72fe982d650ff28e974d0f5a7c974fecb56209
https://github.com/facebookresearch/dino/blob/cc72fe982d650ff28e974d0f5a7c974fecb56209/main_dino.py
Well built: no risk expected (torch's generator reseeded per worker, a few tensors per batch,
a list of a few hundred file names, files opened per sample).  Sizes are scaled down (global
crops 32 px, local 16 px instead of 224 and 96), the distributed sampler is a plain shuffle and
pin_memory is left out (no GPU here).
"""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_image_folder(root: Path, classes: int = 4, per_class: int = 40) -> Path:
    rng = np.random.default_rng(31)
    for c in range(classes):
        (root / f"n{c:08d}").mkdir()
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(root / f"n{c:08d}" / f"{i:04d}.png")
    return root


def random_resized_crop(image: torch.Tensor, size: int, scale: tuple) -> torch.Tensor:
    _, height, width = image.shape
    area = height * width * torch.empty(1).uniform_(*scale).item()
    side = max(4, min(height, width, int(area ** 0.5)))
    top = int(torch.randint(0, height - side + 1, (1,)))
    left = int(torch.randint(0, width - side + 1, (1,)))
    crop = image[:, top:top + side, left:left + side]
    crop = F.interpolate(crop[None], size=(size, size), mode="bilinear", align_corners=False)[0]
    if torch.rand(1).item() < 0.5:
        crop = crop.flip(-1)
    return (crop - MEAN) / STD


class DataAugmentationDINO:
    def __init__(self, global_crops_scale=(0.4, 1.0), local_crops_scale=(0.05, 0.4), local_crops_number=6):
        self.global_crops_scale = global_crops_scale
        self.local_crops_scale = local_crops_scale
        self.local_crops_number = local_crops_number

    def __call__(self, image: torch.Tensor) -> list:
        crops = [random_resized_crop(image, 32, self.global_crops_scale) for _ in range(2)]
        crops += [random_resized_crop(image, 16, self.local_crops_scale) for _ in range(self.local_crops_number)]
        return crops


class ImageFolder(Dataset):
    def __init__(self, root: Path, transform):
        classes = sorted(entry.name for entry in os.scandir(root) if entry.is_dir())
        self.class_to_idx = {name: i for i, name in enumerate(classes)}
        self.samples = sorted((str(root / c / f), self.class_to_idx[c]) for c in classes for f in os.listdir(root / c))
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        tensor = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float().div(255)
        return self.transform(tensor), target


def make_loader():
    dataset = ImageFolder(write_image_folder(scratch()), transform=DataAugmentationDINO())
    return DataLoader(dataset, batch_size=16, shuffle=True, num_workers=2, drop_last=True)
