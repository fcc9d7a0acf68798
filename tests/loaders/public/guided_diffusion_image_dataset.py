"""Class-conditional training images as OpenAI's guided-diffusion loads them: the image files
are listed recursively once, each file's class is taken from its name, the list is sharded by
rank (one rank here), and each sample opens its file with PIL, takes a random crop (random.randrange)
or a centre crop, flips with random.random(), scales to [-1, 1], and returns the array with
{"y": class}.

Source: openai/guided-diffusion, guided_diffusion/image_datasets.py (load_data, ImageDataset,
random_crop_arr), commit aca3097a89fab9c9962b22224d5f48950eb57e29
https://github.com/openai/guided-diffusion/blob/aca3097a89fab9c9962b22224d5f48950eb57e29/guided_diffusion/image_datasets.py
Well built: no risk expected (Python's random is reseeded in every worker by PyTorch; a list of
a few hundred file names; files opened per sample).  load_data's endless `yield from loader` is
left out: make_loader returns the DataLoader it loops over.
"""
import atexit
import os
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image
from torch.utils.data import DataLoader, Dataset

RESOLUTION = 32


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_images(root: Path, count: int = 192) -> Path:
    rng = np.random.default_rng(61)
    for i in range(count):
        sub = root / f"part{i % 3}"
        sub.mkdir(exist_ok=True)
        size = int(rng.integers(36, 56))
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(sub / f"class{i % 5}_{i:04d}.png")
    return root


def list_image_files_recursively(data_dir: Path) -> list:
    results = []
    for entry in sorted(os.listdir(data_dir)):
        full_path = os.path.join(data_dir, entry)
        if entry.split(".")[-1].lower() in ("jpg", "jpeg", "png", "gif"):
            results.append(full_path)
        elif os.path.isdir(full_path):
            results.extend(list_image_files_recursively(full_path))
    return results


def random_crop_arr(pil_image, image_size, min_crop_frac=0.8, max_crop_frac=1.0):
    min_smaller_dim_size = int(np.ceil(image_size / max_crop_frac))
    max_smaller_dim_size = int(np.ceil(image_size / min_crop_frac))
    smaller_dim_size = random.randrange(min_smaller_dim_size, max_smaller_dim_size + 1)
    scale = smaller_dim_size / min(*pil_image.size)
    pil_image = pil_image.resize(tuple(round(x * scale) for x in pil_image.size), resample=Image.BICUBIC)
    arr = np.array(pil_image)
    crop_y = random.randrange(arr.shape[0] - image_size + 1)
    crop_x = random.randrange(arr.shape[1] - image_size + 1)
    return arr[crop_y:crop_y + image_size, crop_x:crop_x + image_size]


class ImageDataset(Dataset):
    def __init__(self, resolution, image_paths, classes=None, shard=0, num_shards=1, random_flip=True):
        self.resolution = resolution
        self.local_images = image_paths[shard::num_shards]
        self.local_classes = None if classes is None else classes[shard::num_shards]
        self.random_flip = random_flip

    def __len__(self):
        return len(self.local_images)

    def __getitem__(self, idx):
        with open(self.local_images[idx], "rb") as f:
            pil_image = Image.open(f)
            pil_image.load()
        arr = random_crop_arr(pil_image.convert("RGB"), self.resolution)
        if self.random_flip and random.random() < 0.5:
            arr = arr[:, ::-1]
        arr = arr.astype(np.float32) / 127.5 - 1
        out_dict = {}
        if self.local_classes is not None:
            out_dict["y"] = np.array(self.local_classes[idx], dtype=np.int64)
        return np.transpose(arr, [2, 0, 1]), out_dict


def make_loader():
    files = list_image_files_recursively(write_images(scratch()))
    class_names = [os.path.basename(path).split("_")[0] for path in files]
    sorted_classes = {x: i for i, x in enumerate(sorted(set(class_names)))}
    dataset = ImageDataset(RESOLUTION, files, classes=[sorted_classes[x] for x in class_names])
    return DataLoader(dataset, batch_size=16, shuffle=True, num_workers=1, drop_last=True)
