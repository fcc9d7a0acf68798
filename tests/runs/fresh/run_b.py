"""Data-parallel training of a small digit classifier on synthetic 8x8 glyphs (torchrun, gloo).

    python -m torch.distributed.run --standalone --nproc_per_node=2 run_b.py
"""
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

EPOCHS = 3


def make_glyphs(n, seed):
    g = torch.Generator().manual_seed(seed)
    protos = torch.rand(10, 1, 8, 8, generator=torch.Generator().manual_seed(99)) > 0.5
    y = torch.randint(0, 10, (n,), generator=g)
    x = protos[y].float() + 0.3 * torch.randn(n, 1, 8, 8, generator=g)
    return TensorDataset(x, y, torch.arange(n))


def build_loaders(rank, world):
    train_ds, val_ds = make_glyphs(240, seed=0), make_glyphs(60, seed=1)
    train_sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True, seed=42)
    val_sampler = DistributedSampler(val_ds, num_replicas=world, rank=rank, shuffle=False)
    train_loader = DataLoader(train_ds, batch_size=16, sampler=train_sampler, num_workers=2,
                              drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=30, sampler=val_sampler, num_workers=1)
    return train_loader, val_loader, train_sampler


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)

    train_loader, val_loader, train_sampler = build_loaders(rank, world)
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 64, 10))
    model = DDP(net)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    first_seen = {}
    for epoch in range(EPOCHS):
        train_sampler.set_epoch(epoch)
        model.train()
        for step, (x, y, idx) in enumerate(train_loader):
            if step == 0:
                first_seen[epoch] = idx[:6].tolist()
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        model.eval()
        correct = torch.zeros(2)
        with torch.no_grad():
            for x, y, _ in val_loader:
                correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)], dtype=torch.float)
        dist.all_reduce(correct)
        if rank == 0:
            print(f"[local_rank {local_rank}] epoch {epoch}: first train ids {first_seen[epoch]}, "
                  f"val acc {correct[0] / correct[1]:.3f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
