# Source: Lightning-AI/pytorch-lightning, src/lightning/fabric/utilities/seed.py (seed_everything(seed, workers=True)
#   sets PL_SEED_WORKERS=1; pl_worker_init_function(worker_id, rank) backs the base seed out of torch.initial_seed(),
#   derives four seeds from (base_seed, worker_id, global_rank) and seeds torch, random and numpy's global state in
#   each worker) and src/lightning/fabric/utilities/data.py / the Trainer's _auto_add_worker_init_fn
#   (dataloader.worker_init_fn = partial(pl_worker_init_function, rank=global_rank) when none is set), introduced by pull
#   request #6960 ("Auto-set DataLoader.worker_init_fn with seed_everything",
#   https://github.com/Lightning-AI/pytorch-lightning/pull/6960), whose example dataset draws np.random in __getitem__.
# Kept: augmentation parameters drawn from numpy's global generator inside __getitem__ (the pattern that repeats across
#   workers without reseeding), seed_everything(workers=True) and the worker_init_fn attached the way the Trainer does;
#   non-persistent workers, so each epoch's workers get new torch seeds and therefore new numpy seeds.
# Changed: seed_everything, pl_worker_init_function and the seed derivation are written out (Lightning is not installed
#   here); a dataset of 256 synthetic 40x40 grey images in memory with a numpy random crop, flip and gain; batch_size
#   16, 2 workers; the sample also returns its drawn parameters.
# EXPECTED: none (numpy's global state is reseeded per worker and per epoch by the worker_init_fn; 12 must not fire)
import os
import random
from functools import partial

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def seed_everything(seed=None, workers=False):
    seed = int(seed)
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ["PL_SEED_WORKERS"] = f"{int(workers)}"
    return seed


def _generate_seed_sequence(base_seed, worker_id, global_rank, count):
    """Generates a sequence of seeds from a base seed, worker id and rank using the linear congruential generator (LCG)
    algorithm."""
    combined_seed = (base_seed << 32) | (worker_id << 16) | global_rank
    seeds = []
    for _ in range(count):
        combined_seed = (combined_seed * 6364136223846793005 + 1) & ((1 << 64) - 1)
        seeds.append(combined_seed)
    return seeds


def pl_worker_init_function(worker_id, rank=None):
    """The worker_init_fn that Lightning automatically adds to your dataloader if you previously set the seed with
    ``seed_everything(seed, workers=True)``."""
    global_rank = rank if rank is not None else 0
    process_seed = torch.initial_seed()
    # back out the base seed so we can use all the bits
    base_seed = process_seed - worker_id
    seed_sequence = _generate_seed_sequence(base_seed, worker_id, global_rank, count=4)
    torch.manual_seed(seed_sequence[0])  # torch takes a 64-bit seed
    random.seed((seed_sequence[1] << 32) | seed_sequence[2])  # combine two 64-bit seeds
    np.random.seed(seed_sequence[3] & 0xFFFFFFFF)  # numpy takes 32-bit seed only


def _auto_add_worker_init_fn(dataloader, rank):
    if int(os.environ.get("PL_SEED_WORKERS", "0")) and dataloader.worker_init_fn is None:
        dataloader.worker_init_fn = partial(pl_worker_init_function, rank=rank)


class RandomCropDataset(Dataset):
    def __init__(self, images, size=32):
        self.images = images
        self.size = size

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        top, left = np.random.randint(0, image.shape[0] - self.size + 1, size=2)
        flip = np.random.rand() < 0.5
        gain = np.random.uniform(0.8, 1.2)
        crop = image[top:top + self.size, left:left + self.size]
        if flip:
            crop = crop[:, ::-1]
        crop = torch.from_numpy(np.ascontiguousarray(crop)).float().mul_(gain / 255.0).unsqueeze(0)
        return crop, torch.tensor([top, left, float(flip), gain], dtype=torch.float64)


def make_loader():
    seed_everything(42, workers=True)
    images = np.random.default_rng(6960).integers(0, 255, (256, 40, 40), dtype=np.uint8)
    loader = DataLoader(RandomCropDataset(images), batch_size=16, shuffle=True, num_workers=2)
    _auto_add_worker_init_fn(loader, rank=0)
    return loader
