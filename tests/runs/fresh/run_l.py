"""Keyword-spotting toy: 1-D conv net on synthetic waveforms with time-shift / gain / noise augmentation.

The augmenter is seeded so that a run can be reproduced from its config.
"""
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SEED = 17
N_CLIPS = 192
CLIP_LEN = 800
BATCH = 16
EPOCHS = 3
WORKERS = 2


class WaveAugment:
    def __init__(self, max_shift=80, gain_db=6.0, noise_p=0.3, seed=None):
        self.max_shift = max_shift
        self.gain_db = gain_db
        self.noise_p = noise_p
        self.rng = random.Random(seed)

    def __call__(self, wav):
        shift = self.rng.randint(-self.max_shift, self.max_shift)
        gain = 10 ** (self.rng.uniform(-self.gain_db, self.gain_db) / 20)
        add_noise = self.rng.random() < self.noise_p
        out = torch.roll(wav, shifts=shift) * gain
        if add_noise:
            out = out + 0.01 * torch.randn_like(out)
        return out, (shift, round(gain, 6), add_noise)


class KeywordClips(Dataset):
    def __init__(self, n, augment=None):
        g = torch.Generator().manual_seed(0)
        t = torch.linspace(0, 1, CLIP_LEN)
        self.labels = torch.randint(0, 3, (n,), generator=g)
        freqs = torch.tensor([5.0, 11.0, 23.0])[self.labels]
        self.clips = torch.sin(2 * torch.pi * freqs[:, None] * t[None, :]) + 0.1 * torch.randn(n, CLIP_LEN, generator=g)
        self.augment = augment

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        wav = self.clips[i]
        params = (0, 1.0, False)
        if self.augment is not None:
            wav, params = self.augment(wav)
        return wav.unsqueeze(0), self.labels[i], params


def collate(batch):
    wavs, labels, params = zip(*batch)
    return torch.stack(wavs), torch.stack(labels), list(params)


model = nn.Sequential(
    nn.Conv1d(1, 16, 9, stride=4), nn.ReLU(),
    nn.Conv1d(16, 32, 9, stride=4), nn.ReLU(),
    nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 3),
)


def main():
    random.seed(SEED)
    torch.manual_seed(SEED)
    ds = KeywordClips(N_CLIPS, augment=WaveAugment(seed=SEED))
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, collate_fn=collate)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    seen_params = []
    for epoch in range(EPOCHS):
        t0 = time.time()
        total = 0.0
        for step, (x, y, params) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            seen_params.extend(params)
            if step < 4:
                print(f"epoch {epoch} step {step}: first clip shift={params[0][0]:+d} "
                      f"gain={params[0][1]:.4f} noise={params[0][2]}")
        print(f"epoch {epoch}: mean loss {total / (step + 1):.4f} ({time.time() - t0:.1f}s)")

    distinct = len(set(seen_params))
    print(f"{len(seen_params)} augmented clips, {distinct} distinct (shift, gain, noise) draws")


if __name__ == "__main__":
    main()
