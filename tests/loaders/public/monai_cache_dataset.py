"""Medical volumes read as MONAI's CacheDataset reads them: the deterministic part of the
transform chain (load, scale intensity) runs once, in the training process, while the dataset is
built, and its results are kept in a list; in __getitem__ each worker takes a cached item and
runs only the random transforms (a random spatial crop and flip) on a copy.  MONAI's DataLoader
passes a worker_init_fn that reseeds the random transforms of the worker's dataset from the
worker's seed (monai.data.utils.worker_init_fn -> set_rnd).

Source: Project-MONAI/MONAI, monai/data/dataset.py (CacheDataset: _fill_cache in __init__,
_transform applying the transforms from the first random one on), commit
8c014d159961e3038e9c26591d41ebd1e41e7d92
https://github.com/Project-MONAI/MONAI/blob/8c014d159961e3038e9c26591d41ebd1e41e7d92/monai/data/dataset.py
and monai/data/dataloader.py, monai/data/utils.py (worker_init_fn, set_rnd).
Well built: no risk expected (the cache is filled before the fork and only read in the workers;
the random transforms are reseeded per worker; a few hundred cached arrays).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_volumes(folder: Path, count: int = 160) -> list:
    rng = np.random.default_rng(51)
    items = []
    for i in range(count):
        image, label = folder / f"img_{i:03d}.npy", folder / f"seg_{i:03d}.npy"
        np.save(image, rng.integers(-1000, 2000, (24, 24, 16), dtype=np.int16))
        np.save(label, (rng.random((24, 24, 16)) > 0.8).astype(np.uint8))
        items.append({"image": str(image), "label": str(label)})
    return items


class LoadImaged:
    def __call__(self, data):
        return {key: np.load(path)[None] for key, path in data.items()}


class ScaleIntensityRanged:
    def __call__(self, data):
        out = dict(data)
        out["image"] = np.clip((data["image"].astype(np.float32) + 1000) / 3000, 0, 1)
        return out


class Randomizable:
    def __init__(self):
        self.R = np.random.RandomState()

    def set_random_state(self, seed):
        self.R = np.random.RandomState(seed % (2 ** 32))


class RandSpatialCropd(Randomizable):
    def __init__(self, size=(16, 16, 12)):
        super().__init__()
        self.size = size

    def __call__(self, data):
        starts = [int(self.R.randint(0, s - c + 1)) for s, c in zip(data["image"].shape[1:], self.size)]
        window = (slice(None),) + tuple(slice(s, s + c) for s, c in zip(starts, self.size))
        return {key: value[window] for key, value in data.items()}


class RandFlipd(Randomizable):
    def __call__(self, data):
        if self.R.rand() < 0.5:
            return {key: np.ascontiguousarray(value[:, ::-1]) for key, value in data.items()}
        return data


class CacheDataset(Dataset):
    def __init__(self, data, transforms):
        self.data = data
        self.transforms = transforms
        first_random = next(i for i, t in enumerate(transforms) if isinstance(t, Randomizable))
        self.deterministic, self.random = transforms[:first_random], transforms[first_random:]
        self._cache = [self._load(item) for item in data]     # _fill_cache, in the training process

    def _load(self, item):
        for transform in self.deterministic:
            item = transform(item)
        return item

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        item = {key: value.copy() for key, value in self._cache[index].items()}
        for transform in self.random:
            item = transform(item)
        return {key: torch.from_numpy(np.ascontiguousarray(value)) for key, value in item.items()}


def worker_init_fn(worker_id):
    info = get_worker_info()
    for offset, transform in enumerate(info.dataset.random):
        transform.set_random_state(info.seed + offset)


def make_loader():
    transforms = [LoadImaged(), ScaleIntensityRanged(), RandSpatialCropd(), RandFlipd()]
    dataset = CacheDataset(write_volumes(scratch()), transforms)
    return DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2, worker_init_fn=worker_init_fn)
