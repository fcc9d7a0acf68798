"""Detection images augmented with numpy's global generator (HSV gains from np.random.uniform)
and Python's random (flips), loaded as YOLOv5's create_dataloader loads them: a
worker_init_fn (seed_worker) that reseeds numpy and random from torch.initial_seed() in every
worker, a seeded torch.Generator for the shuffle, and a collate_fn that stacks the images and
concatenates the variable number of boxes per image, each row tagged with its image's index.
(The HSV step is done with numpy here; YOLOv5 applies it with OpenCV lookup tables.)

Source: ultralytics/yolov5, utils/dataloaders.py (seed_worker, create_dataloader,
LoadImagesAndLabels.collate_fn) and utils/augmentations.py (augment_hsv),
commit 8b3cc5af173a25f860d12be6201fd7e3575bb61c
https://github.com/ultralytics/yolov5/blob/8b3cc5af173a25f860d12be6201fd7e3575bb61c/utils/dataloaders.py
Well built: no risk expected (numpy reseeded per worker; boxes concatenated, not stacked).
"""
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class ImagesAndLabels(Dataset):
    def __init__(self, count: int = 512, size: int = 64, hgain=0.015, sgain=0.7, vgain=0.4, fliplr=0.5):
        rng = np.random.default_rng(27)
        self.images = rng.integers(0, 256, (count, size, size, 3), dtype=np.uint8)
        counts = rng.integers(0, 6, count)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.boxes = np.concatenate([rng.integers(0, 80, (int(counts.sum()), 1)),
                                     rng.random((int(counts.sum()), 4))], axis=1).astype(np.float32)
        self.gains, self.fliplr = np.array([hgain, sgain, vgain]), fliplr

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index].astype(np.float32)
        labels = self.boxes[self.offsets[index]:self.offsets[index + 1]].copy()
        gain = np.random.uniform(-1, 1, 3) * self.gains + 1  # numpy's global generator
        image = np.clip(image * gain, 0, 255)
        if random.random() < self.fliplr:
            image = image[:, ::-1]
            labels[:, 1] = 1 - labels[:, 1]
        out = torch.zeros((len(labels), 6))
        out[:, 1:] = torch.from_numpy(labels)
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1))) / 255.0, out, f"img{index:05d}.jpg"

    @staticmethod
    def collate_fn(batch):
        images, labels, paths = zip(*batch)
        for i, lb in enumerate(labels):
            lb[:, 0] = i  # which image of the batch the box belongs to
        return torch.stack(images, 0), torch.cat(labels, 0), paths


def make_loader(seed: int = 0):
    generator = torch.Generator()
    generator.manual_seed(6148914691236517205 + seed)
    dataset = ImagesAndLabels()
    return DataLoader(dataset, batch_size=16, shuffle=True, num_workers=2, collate_fn=ImagesAndLabels.collate_fn,
                      worker_init_fn=seed_worker, generator=generator)
