"""DDP speaker-embedding toy trained from utterance list files (torchrun, gloo).

Each rank reads its own list files, each DataLoader worker its own subset of
those, so no utterance is read twice.

    python -m torch.distributed.run --standalone --nproc_per_node=2 run_h.py
"""
import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

LIST_SIZES = [10, 10, 10, 6]   # utterances per list file, as exported
FEAT = 40
BATCH = 8


def write_lists(root):
    g = torch.Generator().manual_seed(0)
    paths = []
    uid = 0
    for i, n in enumerate(LIST_SIZES):
        feats = torch.randn(n, FEAT, generator=g)
        spk = torch.randint(0, 5, (n,), generator=g)
        ids = torch.arange(uid, uid + n)
        uid += n
        path = os.path.join(root, f"utt_list_{i}.pt")
        torch.save({"feats": feats, "spk": spk, "ids": ids}, path)
        paths.append(path)
    return paths


class UtteranceLists(IterableDataset):
    def __init__(self, paths, rank, world):
        self.paths = paths[rank::world]

    def __iter__(self):
        info = get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for p in paths:
            d = torch.load(p)
            for f, s, i in zip(d["feats"], d["spk"], d["ids"]):
                yield f, s, i


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
    rank, world = dist.get_rank(), dist.get_world_size()
    root = os.path.join(tempfile.gettempdir(), f"utt-lists-{os.environ.get('TORCHELASTIC_RUN_ID', 'local')}")
    if rank == 0:
        os.makedirs(root, exist_ok=True)
        write_lists(root)
    dist.barrier()
    paths = sorted(os.path.join(root, f) for f in os.listdir(root))

    torch.manual_seed(0)
    loader = DataLoader(UtteranceLists(paths, rank, world), batch_size=BATCH, num_workers=2)
    model = DDP(nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.Linear(64, 5)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    try:
        steps = 0
        for feats, spk, ids in loader:
            loss = F.cross_entropy(model(feats), spk)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            print(f"rank {rank}: step {steps}, {len(ids)} utterances, loss {loss.item():.4f}", flush=True)
        print(f"rank {rank}: epoch done after {steps} steps, syncing before checkpoint", flush=True)
        dist.barrier()
        if rank == 0:
            torch.save(model.module.state_dict(), os.path.join(root, "spk_model.pt"))
            print("checkpoint saved", flush=True)
    finally:
        if rank == 0:
            shutil.rmtree(root, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
