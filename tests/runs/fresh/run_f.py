"""Two-process data-parallel training on a sharded token stream (torch.multiprocessing + gloo).

Shards are plain .pt files; the stream hands whole shards to DataLoader workers.
Started directly with `python run_f.py` (spawns its own 2 ranks).
"""
import datetime
import os
import shutil
import socket
import tempfile
from collections import Counter

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

WORLD = 2
N_SHARDS = 8
PER_SHARD = 12
CTX = 8
VOCAB = 64


def write_shards(root):
    g = torch.Generator().manual_seed(0)
    for s in range(N_SHARDS):
        toks = torch.randint(0, VOCAB, (PER_SHARD, CTX + 1), generator=g)
        ids = torch.arange(s * PER_SHARD, (s + 1) * PER_SHARD)
        torch.save({"tokens": toks, "ids": ids}, os.path.join(root, f"shard-{s:05d}.pt"))


class ShardStream(IterableDataset):
    def __init__(self, root):
        self.shards = sorted(os.path.join(root, f) for f in os.listdir(root) if f.startswith("shard-"))

    def __iter__(self):
        info = get_worker_info()
        shards = self.shards
        if info is not None:
            shards = shards[info.id::info.num_workers]
        for path in shards:
            d = torch.load(path)
            for toks, i in zip(d["tokens"], d["ids"]):
                yield toks[:-1], toks[1:], i


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.out = nn.Linear(32, VOCAB)

    def forward(self, x):
        return self.out(torch.tanh(self.emb(x)))


def worker(rank, world, port, root):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    loader = DataLoader(ShardStream(root), batch_size=12, num_workers=2)
    model = DDP(TinyLM())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    ids_seen = []
    for x, y, ids in loader:
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ids_seen.extend(ids.tolist())

    gathered = [None] * world
    dist.all_gather_object(gathered, ids_seen)
    if rank == 0:
        total = N_SHARDS * PER_SHARD
        for r, ids in enumerate(gathered):
            print(f"rank {r}: trained on {len(ids)} samples ({len(set(ids))} distinct)")
        both = set(gathered[0]) & set(gathered[1])
        overall = Counter(i for ids in gathered for i in ids)
        print(f"dataset has {total} samples; {len(both)} were trained on by both ranks; "
              f"{sum(overall.values())} sample-steps in one epoch")
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    root = tempfile.mkdtemp(prefix="shards-")
    try:
        write_shards(root)
        mp.spawn(worker, args=(WORLD, free_port(), root), nprocs=WORLD, join=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
