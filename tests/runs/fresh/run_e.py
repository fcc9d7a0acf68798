"""Denoising regressor with a noise curriculum, trained with Accelerate.

The dataset is expensive to set up (it builds a dictionary of basis signals),
so the loader keeps its workers alive between epochs. The curriculum raises
the input noise level each epoch.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

N = 256
DIM = 64
BATCH = 32
CURRICULUM = [0.0, 0.1, 0.25, 0.5]   # noise std for epochs 0..3


class NoisySignals(Dataset):
    def __init__(self, n, dim):
        time.sleep(0.5)  # stands in for loading / indexing the raw recordings
        g = torch.Generator().manual_seed(0)
        basis = torch.randn(8, dim, generator=g)
        coef = torch.randn(n, 8, generator=g)
        self.clean = coef @ basis / 8 ** 0.5
        self.noise_std = 0.0

    def set_noise(self, std):
        self.noise_std = std

    def __len__(self):
        return len(self.clean)

    def __getitem__(self, i):
        clean = self.clean[i]
        noisy = clean + self.noise_std * torch.randn_like(clean)
        return noisy, clean, torch.tensor(self.noise_std)


def main():
    accelerator = Accelerator(cpu=True)
    ds = NoisySignals(N, DIM)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=2,
                        persistent_workers=True, prefetch_factor=2)
    model = nn.Sequential(nn.Linear(DIM, 128), nn.GELU(), nn.Linear(128, DIM))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, opt, loader = accelerator.prepare(model, opt, loader)

    for epoch, std in enumerate(CURRICULUM):
        ds.set_noise(std)
        model.train()
        total, used = 0.0, []
        for noisy, clean, noise_used in loader:
            loss = F.mse_loss(model(noisy), clean)
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()
            total += loss.item()
            used.append(noise_used)
        used = torch.cat(used)
        accelerator.print(
            f"epoch {epoch}: curriculum noise {std:.2f}, batches saw noise "
            f"{sorted(set(round(v, 2) for v in used.tolist()))}, loss {total / len(loader):.4f}")


if __name__ == "__main__":
    main()
