"""Mel-to-waveform vocoder training, data parallel over 2 CPU processes (gloo).

Launch: python -m torch.distributed.run --standalone --nproc_per_node=2 run_e.py

A single-GPU recipe moved to DDP: `shuffle=True` became `sampler=DistributedSampler(...)`.
"""
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

N_SEGMENTS = 88
HOP = 16


class MelSegments(Dataset):
    """(mel, audio) pairs cut from an utterance; synthesised from the segment id."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        audio = torch.sin(torch.linspace(0, 20 + idx % 13, 32 * HOP)) + 0.05 * torch.randn(32 * HOP, generator=g)
        mel = audio.view(32, HOP).abs().log1p().t().repeat(5, 1)  # (80, 32)
        return mel, audio, idx


class TinyVocoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(80, 64, 3, padding=1)
        self.up = nn.ConvTranspose1d(64, 16, HOP, stride=HOP)
        self.post = nn.Conv1d(16, 1, 7, padding=3)

    def forward(self, mel):
        return torch.tanh(self.post(torch.relu(self.up(torch.relu(self.pre(mel)))))).squeeze(1)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=10))
    rank = dist.get_rank()
    torch.manual_seed(1234)

    data = MelSegments(N_SEGMENTS)
    sampler = DistributedSampler(data, shuffle=True)
    loader = DataLoader(data, batch_size=8, sampler=sampler, num_workers=2, drop_last=True)

    model = DDP(TinyVocoder())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    for epoch in range(4):
        seen = []
        total = 0.0
        for mel, audio, idx in loader:
            loss = nn.functional.l1_loss(model(mel), audio)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            seen.extend(idx.tolist())
        print(f"[rank {rank}] epoch {epoch}: l1 {total / len(loader):.4f}, "
              f"first segments {seen[:8]}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
