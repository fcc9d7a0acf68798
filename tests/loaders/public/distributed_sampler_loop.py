"""A DistributedSampler-driven loader as pytorch/examples' ImageNet script builds it: one rank's
share of the data, shuffled with seed + epoch, and a training loop that calls
train_sampler.set_epoch(epoch) before each epoch (train_epochs below shows the loop).

Source: pytorch/examples, imagenet/main.py (DistributedSampler, train_sampler.set_epoch),
commit 493da9304e56ff5160f78d01a54992db35df2a98
https://github.com/pytorch/examples/blob/493da9304e56ff5160f78d01a54992db35df2a98/imagenet/main.py
Well built: no risk expected (scenario 15 can only be a note: the doctor does not see the loop).
"""
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_loader():
    features = torch.randn(512, 16, generator=torch.Generator().manual_seed(10))
    dataset = TensorDataset(features, torch.arange(512) % 10)
    # Rank 0 of 2, given explicitly: no process group is needed to build or iterate it.
    sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)
    return DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2)


def train_epochs(epochs: int = 2) -> list:
    loader = make_loader()
    firsts = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        firsts.append(next(iter(loader))[1].tolist())
    return firsts
