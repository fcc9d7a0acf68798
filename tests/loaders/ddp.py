"""The loader of one rank in a data-parallel job: a DistributedSampler splits the data."""
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

WORLD_SIZE, RANK = 2, 0  # from the launcher's environment in a real job


def make_loader():
    dataset = TensorDataset(torch.randn(1024, 16), torch.randint(0, 10, (1024,)))
    sampler = DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=RANK, shuffle=True)
    return DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=2, pin_memory=False)
