"""Images in class folders, listed once by timm's ReaderImageFolder (find_images_and_targets: a
sorted list of (path, class index) pairs) and decoded by timm's ImageDataset, which asks the
reader for an open file and hands it to PIL, then to a transform.

Source: huggingface/pytorch-image-models, timm/data/readers/reader_image_folder.py and
timm/data/dataset.py (ImageDataset), commit e9dccc918c19fa5d1efd245b2417b1cd367a07a6
https://github.com/huggingface/pytorch-image-models/blob/e9dccc918c19fa5d1efd245b2417b1cd367a07a6/timm/data/readers/reader_image_folder.py
Well built: no risk expected (a list of a few hundred file names, files opened per sample).
"""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

IMG_EXTENSIONS = (".png", ".jpg", ".jpeg")


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_image_folder(root: Path, classes: int = 4, per_class: int = 48) -> Path:
    rng = np.random.default_rng(22)
    for c in range(classes):
        folder = root / f"class_{c}"
        folder.mkdir()
        for i in range(per_class):
            pixels = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{i:04d}.png")
    return root


def find_images_and_targets(folder: Path):
    pairs, labels = [], set()
    for dirpath, _, files in os.walk(folder):
        label = os.path.basename(dirpath)
        for name in files:
            if name.lower().endswith(IMG_EXTENSIONS):
                pairs.append((os.path.join(dirpath, name), label))
                labels.add(label)
    class_to_idx = {name: i for i, name in enumerate(sorted(labels))}
    samples = sorted(((path, class_to_idx[label]) for path, label in pairs), key=lambda p: p[0])
    return samples, class_to_idx


class ReaderImageFolder:
    def __init__(self, root: Path):
        self.samples, self.class_to_idx = find_images_and_targets(root)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return open(path, "rb"), target

    def __len__(self):
        return len(self.samples)


def center_crop_to_tensor(image: Image.Image, size: int = 32) -> torch.Tensor:
    left, top = (image.width - size) // 2, (image.height - size) // 2
    array = np.asarray(image.crop((left, top, left + size, top + size)), dtype=np.float32) / 255.0
    return torch.from_numpy(array).permute(2, 0, 1)


class ImageDataset(Dataset):
    def __init__(self, root: Path, transform=center_crop_to_tensor):
        self.reader = ReaderImageFolder(root)
        self.transform = transform

    def __getitem__(self, index):
        handle, target = self.reader[index]
        with handle:
            image = Image.open(handle).convert("RGB")
        return self.transform(image), target

    def __len__(self):
        return len(self.reader)


def make_loader():
    dataset = ImageDataset(write_image_folder(scratch()))
    return DataLoader(dataset, batch_size=32, shuffle=True, num_workers=2, drop_last=True)
