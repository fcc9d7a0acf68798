"""Keyword-spotting model, data parallel over 2 CPU processes (gloo).

Launch: python -m torch.distributed.run --standalone --nproc_per_node=2 run_a.py

Each rank takes its own contiguous slice of the utterance list (a partition by
ceil(total / world)), trains one epoch, then waits for rank 0 to write the checkpoint.
"""
import datetime
import math

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

N_UTTERANCES = 37
N_KEYWORDS = 5
BATCH = 6


class KeywordClips(Dataset):
    """Log-mel features of short clips, synthesised from the clip id."""

    def __init__(self, clip_ids):
        self.clip_ids = list(clip_ids)

    def __len__(self):
        return len(self.clip_ids)

    def __getitem__(self, i):
        cid = self.clip_ids[i]
        g = torch.Generator().manual_seed(1000 + cid)
        label = cid % N_KEYWORDS
        mel = torch.randn(40, 50, generator=g) * 0.5
        mel[label * 8:(label + 1) * 8] += 1.0
        return mel, label


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(),
                                  nn.Conv1d(64, 64, 5, padding=2), nn.ReLU())
        self.head = nn.Linear(64, N_KEYWORDS)

    def forward(self, x):
        return self.head(self.conv(x).mean(-1))


def partition(total, rank, world):
    per_rank = int(math.ceil(total / float(world)))
    start = rank * per_rank
    return range(start, min(start + per_rank, total))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)

    clips = KeywordClips(partition(N_UTTERANCES, rank, world))
    loader = DataLoader(clips, batch_size=BATCH, shuffle=True, num_workers=2)
    print(f"rank {rank}: {len(clips)} clips, {len(loader)} batches per epoch", flush=True)

    model = DDP(KWS())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        model.train()
        for step, (mel, label) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(mel), label)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.3f}", flush=True)
        # everyone waits here while rank 0 writes the epoch checkpoint
        dist.barrier()
        if rank == 0:
            print(f"epoch {epoch} done, checkpoint saved", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
