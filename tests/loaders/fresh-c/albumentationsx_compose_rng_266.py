# Source: albumentations-team/AlbumentationsX issue #266 ("[Bug] Workers produce identical augmentations per batch
#   position across epochs when used with PyTorch DataLoader", https://github.com/albumentations-team/AlbumentationsX/issues/266,
#   2026; minimal example: class TestDataset(Dataset) building A.Compose([HorizontalFlip(p=0.5), Affine(p=0.5),
#   CoarseDropout(num_holes_range=(1, 1), p=0.5)]) in __init__, self.data = np.ones((100, 32, 32, 3), uint8) * 255,
#   cv2.setNumThreads(0)) and the fix, pull request #272 ("fix(compose): refresh unseeded worker RNG from PyTorch
#   DataLoader", https://github.com/albumentations-team/AlbumentationsX/pull/272: an unseeded Compose kept the internal
#   random state it had when the workers were forked).
# Kept: the transform pipeline built once in the dataset's __init__ and owning its own numpy Generator (created at
#   construction, no seed given), every random parameter (flip, affine shear/scale/translate, dropout hole position) drawn
#   from that generator inside the workers, nothing re-seeding it per worker; 100 white 32x32 images; cv2.setNumThreads(0).
# Changed: albumentations is not installed here, so Compose, HorizontalFlip, Affine and CoarseDropout are written out
#   (cv2.warpAffine for the affine) with the generator-on-the-Compose design of AlbumentationsX before the fix;
#   batch_size 10, shuffle=True, 2 workers; the sample also returns the drawn parameters so a check can compare them.
# EXPECTED: 12 (a generator copied into every forked worker: the workers draw identical augmentation sequences, and
#   every epoch starts them again from the same state)
import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

cv2.setNumThreads(0)


class HorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def apply(self, image, rng):
        flip = rng.random() < self.p
        return (image[:, ::-1].copy() if flip else image), float(flip)


class Affine:
    def __init__(self, p=0.5, scale=(0.9, 1.1), shear=(-15, 15), translate=(-0.1, 0.1)):
        self.p, self.scale, self.shear, self.translate = p, scale, shear, translate

    def apply(self, image, rng):
        if rng.random() >= self.p:
            return image, 0.0
        h, w = image.shape[:2]
        s = rng.uniform(*self.scale)
        sh = np.deg2rad(rng.uniform(*self.shear))
        tx, ty = rng.uniform(*self.translate, size=2) * (w, h)
        matrix = np.float32([[s, np.tan(sh), tx], [0, s, ty]])
        return cv2.warpAffine(image, matrix, (w, h), borderMode=cv2.BORDER_CONSTANT), float(sh)


class CoarseDropout:
    def __init__(self, num_holes_range=(1, 1), hole_size=8, p=0.5):
        self.num_holes_range, self.hole_size, self.p = num_holes_range, hole_size, p

    def apply(self, image, rng):
        if rng.random() >= self.p:
            return image, -1.0
        image = image.copy()
        h, w = image.shape[:2]
        y = x = 0
        for _ in range(int(rng.integers(self.num_holes_range[0], self.num_holes_range[1] + 1))):
            y, x = int(rng.integers(0, h - self.hole_size)), int(rng.integers(0, w - self.hole_size))
            image[y:y + self.hole_size, x:x + self.hole_size] = 0
        return image, float(y * w + x)


class Compose:
    def __init__(self, transforms, seed=None):
        self.transforms = transforms
        self.seed = seed
        self.random_generator = np.random.default_rng(seed)  # made once, in the process that builds the dataset

    def __call__(self, image):
        params = []
        for t in self.transforms:
            image, drawn = t.apply(image, self.random_generator)
            params.append(drawn)
        return {"image": image, "params": params}


class TestDataset(Dataset):
    def __init__(self):
        self.augmentations = Compose([
            HorizontalFlip(p=0.5),
            Affine(p=0.5),
            CoarseDropout(num_holes_range=(1, 1), p=0.5),
        ])
        self.data = np.ones((100, 32, 32, 3), dtype=np.uint8) * 255

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        out = self.augmentations(image=self.data[idx])
        img = torch.from_numpy(out["image"].transpose(2, 0, 1).copy()).float() / 255.0
        return img, torch.tensor(out["params"], dtype=torch.float64)


def make_loader():
    return DataLoader(TestDataset(), batch_size=10, shuffle=True, num_workers=2)
