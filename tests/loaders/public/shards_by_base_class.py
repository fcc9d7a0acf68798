"""An IterableDataset whose worker split lives in a base class: the base picks this worker's
shard files (get_worker_info), the subclass only reads a shard.  Reading the subclass alone
finds no split; the epoch shows each sample once.

Source: the shape of ZIDSIterableDataset and its generated subclasses (a framework base class
that data classes override), dsframework by zoominfo, and of the shard helper get_shard_info in
public training code found by the project's search; the split itself as PyTorch's documented
IterableDataset example (torch/utils/data/dataset.py, class IterableDataset):
https://github.com/pytorch/pytorch/blob/main/torch/utils/data/dataset.py
Well built: no risk expected.
Gathered after the doctor's rules of issue 27 were written.
"""
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class ShardedBase(IterableDataset):
    def __init__(self, shards: list):
        self.shards = shards

    def my_shards(self) -> list:
        info = get_worker_info()
        return self.shards if info is None else self.shards[info.id::info.num_workers]

    def __iter__(self):
        for shard in self.my_shards():
            yield from self.read(shard)

    def read(self, shard):
        raise NotImplementedError


class RangeShards(ShardedBase):
    def read(self, shard):
        start, stop = shard
        for i in range(start, stop):
            yield torch.tensor([i, i * i], dtype=torch.float64)


def make_loader():
    return DataLoader(RangeShards([(s * 100, s * 100 + 100) for s in range(4)]), batch_size=10, num_workers=2)
