# Source: albumentations-team/albumentations pull request #2561 ("Fix reproducibility",
#   https://github.com/albumentations-team/albumentations/pull/2561, 2025: Compose keeps the seed it was given,
#   _get_effective_seed derives a per-worker seed from torch.initial_seed(), and _check_worker_seed, called from
#   __call__, re-creates the Compose's generator the first time it runs in a DataLoader worker) and its follow-up in
#   AlbumentationsX pull request #272 (https://github.com/albumentations-team/AlbumentationsX/pull/272, 2026: the same
#   refresh for a Compose built without a seed); pipeline as in the Albumentations reproducibility guide
#   (A.Compose([...], seed=137)) and the dataset of AlbumentationsX issue #266.
# Kept: a Compose built once in the dataset's __init__ with seed=137 and its own numpy Generator; in every call it
#   checks get_worker_info() and torch.initial_seed() and, when they changed, re-creates its generator from
#   seed + torch.initial_seed(), so each worker of each epoch draws its own sequence; HorizontalFlip, Affine and
#   CoarseDropout drawing from that generator; 100 white 32x32 images; cv2.setNumThreads(0).
# Changed: albumentations is not installed here, so Compose and the three transforms are written out (cv2.warpAffine
#   for the affine); batch_size 10, shuffle=True, 2 workers; the sample also returns the drawn parameters.
# EXPECTED: none (a generator on the dataset, but the transform re-seeds it from the worker's torch seed inside each
#   worker; 12 must not fire)
import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

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
        self._last_torch_seed = None
        self.random_generator = np.random.default_rng(seed)

    def _get_effective_seed(self, base_seed):
        info = get_worker_info()
        if info is None:
            return base_seed
        torch_seed = torch.initial_seed()  # differs per worker and per epoch
        return ((base_seed if base_seed is not None else 0) + torch_seed) % (2 ** 32)

    def _check_worker_seed(self):
        if get_worker_info() is None:
            return
        torch_seed = torch.initial_seed()
        if torch_seed != self._last_torch_seed:
            self._last_torch_seed = torch_seed
            self.random_generator = np.random.default_rng(self._get_effective_seed(self.seed))

    def __call__(self, image):
        self._check_worker_seed()
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
        ], seed=137)
        self.data = np.ones((100, 32, 32, 3), dtype=np.uint8) * 255

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        out = self.augmentations(image=self.data[idx])
        img = torch.from_numpy(out["image"].transpose(2, 0, 1).copy()).float() / 255.0
        return img, torch.tensor(out["params"], dtype=torch.float64)


def make_loader():
    return DataLoader(TestDataset(), batch_size=10, shuffle=True, num_workers=2)
