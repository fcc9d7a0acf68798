# Source: kazewong/ThereIsASky, data/loader/galaxy_zoo.py, the ZipFile version of the file
#   (https://github.com/kazewong/ThereIsASky, data/loader/galaxy_zoo.py: class GalaxyZooImageDataset(Dataset):
#   __init__ keeps self.zip_file = ZipFile(path) and its namelist; __getitem__ does
#   Image.open(BytesIO(self.zip_file.read(name))) then the transform; other stored versions, e.g. commit ebf2932e, keep
#   h5py.File(path, 'r')['images'] from __init__ instead) and scripts/galaxy_zoo_train.py of the same repository
#   (random_split(GalaxyZooImageDataset(path), (0.8, 0.2)), DataLoader(..., num_workers=8)).
# Kept: one zipfile.ZipFile opened in __init__ and kept on the dataset, every sample read through it in the workers
#   (ZipFile.read seeks and reads the one underlying file object), the name list filtered as in the original,
#   ToTensor-like conversion, random_split 0.8/0.2, batch_size 16.
# Changed: 96 synthetic 64x64 RGB JPEGs written into a zip in a temp dir (removed at exit) instead of the Galaxy Zoo
#   archive; torchvision.transforms.ToTensor written out with numpy; the DistributedSampler of the training script
#   dropped (one process), shuffle=True instead; num_workers 8 -> 4.
# EXPECTED: 11 (one open file handle, the ZipFile's, inherited by every forked worker: seek/read pairs of different
#   workers interleave on the shared offset, so members are read with another worker's position: BadZipFile, CRC
#   errors or wrong bytes)
import atexit
import io
import os
import shutil
import tempfile
import zipfile
from io import BytesIO
from zipfile import ZipFile

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, random_split


def _write_archive(count=96, side=64):
    root = tempfile.mkdtemp(prefix="fc-galaxyzoo-")
    atexit.register(shutil.rmtree, root, True)
    path = os.path.join(root, "images_gz2.zip")
    rng = np.random.default_rng(2)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("images_gz2/", b"")
        archive.writestr("__MACOSX/", b"")
        for i in range(count):
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(buffer, format="JPEG", quality=90)
            archive.writestr(f"images_gz2/{100000 + i}.jpg", buffer.getvalue())
    return path


def to_tensor(image):
    array = np.asarray(image, dtype=np.float32) / 255.0
    return torch.from_numpy(array.transpose(2, 0, 1).copy())


class GalaxyZooImageDataset(Dataset):

    def __init__(self, path: str, transform=to_tensor):
        self.zip_file = ZipFile(path)
        self.transform = transform
        name_list = self.zip_file.namelist()
        self.name_list = list(filter(lambda x: name_list[2] not in x, name_list))[1:]
        self.name_list = [n for n in self.name_list if n.endswith(".jpg")]

    def __len__(self):
        return len(self.name_list)

    def __getitem__(self, idx):
        img = Image.open(BytesIO(self.zip_file.read(self.name_list[idx]))).convert("RGB")
        if self.transform:
            img = self.transform(img)
        return img


def make_loader():
    dataset = GalaxyZooImageDataset(_write_archive())
    train_set, test_set = random_split(dataset, (0.8, 0.2), generator=torch.Generator().manual_seed(0))
    return DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4)
