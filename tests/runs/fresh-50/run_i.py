"""Satellite-tile land-cover classifier, data parallel over 2 CPU processes (gloo).

Launch: python -m torch.distributed.run --standalone --nproc_per_node=2 run_i.py

DistributedSampler with the epoch set before each epoch's iterator, drop_last so both
ranks run the same number of steps, persistent workers.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

N_TILES = 100
N_CLASSES = 6


class Tiles(Dataset):
    """4-band 32x32 tiles; each class has its own mean reflectance per band."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(7 * i + 3)
        label = i % N_CLASSES
        tile = torch.rand(4, 32, 32, generator=g) * 0.3
        tile[label % 4] += 0.2 + 0.1 * (label // 4)
        if torch.rand(1, generator=g).item() < 0.5:
            tile = tile.flip(-1)
        return tile, label, i


def make_model():
    return nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(32, N_CLASSES))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    rank = dist.get_rank()
    torch.manual_seed(0)

    data = Tiles(N_TILES)
    sampler = DistributedSampler(data, shuffle=True, seed=17, drop_last=True)
    loader = DataLoader(data, batch_size=10, sampler=sampler, num_workers=2,
                        persistent_workers=True, drop_last=True)

    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        correct, seen = 0, []
        for tile, label, idx in loader:
            logits = model(tile)
            loss = nn.functional.cross_entropy(logits, label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += (logits.argmax(1) == label).sum().item()
            seen.extend(idx.tolist())
        print(f"[rank {rank}] epoch {epoch}: {len(seen)} tiles, acc {correct / len(seen):.2f}, "
              f"first {seen[:6]}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
