"""Repeated augmentation as torchvision's classification reference trains with it: RASampler
shuffles with a generator seeded by seed + epoch, repeats every index a few times so that each
image is seen under several random augmentations, deals the indices out to the ranks, and the
training loop calls train_sampler.set_epoch(epoch) before each epoch (train_epochs below).
The augmentation (a random crop and flip) draws from torch's generator, which PyTorch seeds
in every worker.

Source: pytorch/vision, references/classification/sampler.py (RASampler) and
references/classification/train.py (RASampler, set_epoch), commit 775e76043cb82dec48ea07c7f96917f66413017f
https://github.com/pytorch/vision/blob/775e76043cb82dec48ea07c7f96917f66413017f/references/classification/sampler.py
Well built: no risk expected (the sampler runs in the main process and is told the epoch).
"""
import math

import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class RASampler(Sampler):
    def __init__(self, dataset, num_replicas: int, rank: int, shuffle: bool = True, seed: int = 0,
                 repetitions: int = 3):
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.repetitions, self.epoch = shuffle, seed, repetitions, 0
        self.num_samples = int(math.ceil(len(dataset) * repetitions / num_replicas))
        self.total_size = self.num_samples * num_replicas
        self.num_selected_samples = int(math.floor(len(dataset) // 256 * 256 / num_replicas))

    def __iter__(self):
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(len(self.dataset), generator=generator).tolist()
        else:
            indices = list(range(len(self.dataset)))
        indices = [i for i in indices for _ in range(self.repetitions)]
        indices += indices[: self.total_size - len(indices)]
        mine = indices[self.rank:self.total_size:self.num_replicas]
        return iter(mine[: self.num_selected_samples])

    def __len__(self):
        return self.num_selected_samples

    def set_epoch(self, epoch: int):
        self.epoch = epoch


class CroppedImages(Dataset):
    def __init__(self, count: int = 2_048):
        generator = torch.Generator().manual_seed(30)
        self.images = torch.randint(0, 256, (count, 3, 40, 40), dtype=torch.uint8, generator=generator)
        self.targets = torch.randint(0, 100, (count,), generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        top, left = torch.randint(0, 9, (2,)).tolist()
        image = self.images[index, :, top:top + 32, left:left + 32].float().div(255)
        if torch.rand(1).item() < 0.5:
            image = image.flip(-1)
        return image, self.targets[index]


def make_loader():
    dataset = CroppedImages()
    sampler = RASampler(dataset, num_replicas=2, rank=0, shuffle=True, repetitions=3)  # rank 0 of 2, given explicitly
    return DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2, pin_memory=False)


def train_epochs(epochs: int = 2) -> list:
    loader = make_loader()
    firsts = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        firsts.append(next(iter(loader))[1][:6].tolist())
    return firsts
