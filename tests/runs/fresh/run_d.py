"""DDP training of a tabular MLP, launched with torchrun (CPU / gloo).

    python -m torch.distributed.run --standalone --nproc_per_node=2 run_d.py
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

N_ROWS = 200
FEATURES = 12
BATCH = 10
EPOCHS = 3


class ChurnTable(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, FEATURES, generator=g)
        w = torch.randn(FEATURES, generator=g)
        self.y = (self.x @ w > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], i


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    ds = ChurnTable(N_ROWS)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=2)

    model = DDP(nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    seen = set()
    for epoch in range(EPOCHS):
        model.train()
        order, total = [], 0.0
        for x, y, idx in loader:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            order.extend(idx.tolist())
        seen.update(order)
        orders = [None] * world
        dist.all_gather_object(orders, order)
        if rank == 0:
            for r, o in enumerate(orders):
                print(f"epoch {epoch} rank {r}: first indices {o[:8]}")
            print(f"epoch {epoch}: loss {total / len(loader):.4f}")
    counts = [None] * world
    dist.all_gather_object(counts, len(seen))
    if rank == 0:
        print(f"distinct rows each rank trained on over {EPOCHS} epochs: {counts} (dataset has {N_ROWS})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
