"""Small CNN on synthetic 'cell microscopy' patches, trained with Lightning.

Augmentation follows the pipeline-object pattern (a Compose-like object built
once in the Dataset's __init__, seeded so that runs are reproducible).
"""
from collections import Counter

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

N_IMAGES = 128
IMG = 24
CROP = 20
BATCH = 16
EPOCHS = 2
WORKERS = 2


class RandomCropFlipJitter:
    """Random crop, horizontal flip and brightness jitter with its own generator."""

    def __init__(self, crop, seed=1234):
        self.crop = crop
        self.rng = np.random.default_rng(seed)

    def __call__(self, img):
        _, h, w = img.shape
        top = int(self.rng.integers(0, h - self.crop + 1))
        left = int(self.rng.integers(0, w - self.crop + 1))
        flip = bool(self.rng.random() < 0.5)
        gain = float(self.rng.uniform(0.7, 1.3))
        out = img[:, top:top + self.crop, left:left + self.crop] * gain
        if flip:
            out = out.flip(-1)
        return out, (top, left, int(flip), round(gain, 5))


class CellPatches(Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 3, IMG, IMG, generator=g)
        self.labels = torch.randint(0, 4, (n,), generator=g)
        self.augment = RandomCropFlipJitter(CROP, seed=1234)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        img, params = self.augment(self.images[idx])
        return img, self.labels[idx], torch.tensor(params[:3]), torch.tensor(params[3])


class CellNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            nn.Flatten(), nn.Linear(16, 4),
        )
        self.aug_log = []  # (epoch, top, left, flip, gain) for the augmentation report

    def training_step(self, batch, batch_idx):
        x, y, ints, gain = batch
        for row, g in zip(ints.tolist(), gain.tolist()):
            self.aug_log.append((self.current_epoch, *row, g))
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=False)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def on_train_end(self):
        params = [p[1:] for p in self.aug_log]
        counts = Counter(params)
        repeated = sum(c for c in counts.values() if c > 1)
        print(f"augmentation report: {len(params)} draws, {len(counts)} distinct parameter sets, "
              f"{repeated} draws share their (crop, flip, gain) with another sample")
        for p, c in counts.most_common(3):
            print(f"  crop=({p[0]},{p[1]}) flip={p[2]} gain={p[3]:.5f} drawn {c} times")


def main():
    L.seed_everything(42, workers=True)
    ds = CellPatches(N_IMAGES)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS)
    model = CellNet()
    trainer = L.Trainer(
        max_epochs=EPOCHS, accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(model, train_dataloaders=loader)


if __name__ == "__main__":
    main()
