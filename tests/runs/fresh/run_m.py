"""Click-through model on sharded event logs, two data-parallel processes (torch.multiprocessing, gloo).

Shards are assigned round-robin over (rank, dataloader worker) pairs; each
epoch reshuffles the shard order with a seed shared by all ranks.
Started directly with `python run_m.py`.
"""
import datetime
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

WORLD = 2
WORKERS = 2
N_SHARDS = 8
ROWS = 16
FEATS = 10
EPOCHS = 2


def write_shards(root):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(FEATS, generator=g)
    for s in range(N_SHARDS):
        x = torch.randn(ROWS, FEATS, generator=g)
        y = (x @ w + 0.1 * torch.randn(ROWS, generator=g) > 0).float()
        ids = torch.arange(s * ROWS, (s + 1) * ROWS)
        torch.save((x, y, ids), os.path.join(root, f"events-{s:04d}.pt"))


class EventShards(IterableDataset):
    def __init__(self, root, rank, world, seed=0):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root))
        self.rank, self.world, self.seed = rank, world, seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        files = [self.files[i] for i in torch.randperm(len(self.files), generator=g).tolist()]
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        for path in files[self.rank * nw + wid::self.world * nw]:
            x, y, ids = torch.load(path)
            yield from zip(x, y, ids)


def run(rank, world, root):
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    ds = EventShards(root, rank, world)
    loader = DataLoader(ds, batch_size=8, num_workers=WORKERS)
    model = DDP(nn.Linear(FEATS, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)

    for epoch in range(EPOCHS):
        ds.set_epoch(epoch)
        ids_seen, steps, total = [], 0, 0.0
        for x, y, ids in loader:
            loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            ids_seen.extend(ids.tolist())
            steps += 1
            total += loss.item()
        per_rank = [None] * world
        dist.all_gather_object(per_rank, (steps, ids_seen))
        if rank == 0:
            all_ids = [i for _, ids in per_rank for i in ids]
            print(f"epoch {epoch}: steps per rank {[s for s, _ in per_rank]}, "
                  f"{len(all_ids)} samples, {len(set(all_ids))} distinct of {N_SHARDS * ROWS}, "
                  f"rank0 loss {total / steps:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    root = tempfile.mkdtemp(prefix="events-")
    try:
        write_shards(root)
        mp.spawn(run, args=(WORLD, root), nprocs=WORLD)
    finally:
        shutil.rmtree(root, ignore_errors=True)
